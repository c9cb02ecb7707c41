<?php
// The peer of `make bench`'s intake figures (scripts/bench-intake.sh): a back office as PHP
// applications take files, at its simplest. `php -S` runs it; PHP's own multipart parser fills
// $_FILES, and each file is moved into INTAKE_STORE under a unique name. It checks the Bearer
// token (INTAKE_TOKEN) and nothing else: no digests, no encryption, no fsync.
$token = getenv('INTAKE_TOKEN') ?: '';
if ($token !== '' && ($_SERVER['HTTP_AUTHORIZATION'] ?? '') !== "Bearer $token") {
    http_response_code(401);
    exit;
}
$store = getenv('INTAKE_STORE');
$n = 0;
foreach ($_FILES as $field) {
    foreach ((array)$field['tmp_name'] as $i => $tmp) {
        if (((array)$field['error'])[$i] !== UPLOAD_ERR_OK) { http_response_code(422); exit; }
        move_uploaded_file($tmp, tempnam($store, 'doc'));
        $n++;
    }
}
header('Content-Type: application/json');
echo json_encode(['stored' => $n]), "\n";
