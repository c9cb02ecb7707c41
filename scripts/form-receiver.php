<?php
// A back office as PHP applications take files: `php -S` runs this script and PHP's own
// multipart parser fills $_FILES and $_POST. It is the test peer of `vault upload --protocol
// form` (and an example for users), configured by environment variables:
//   FORM_STORE  folder where each document is stored as <id> (and names.json: id -> name as PHP saw it;
//               a captured document as <id>.age and <id>.meta.age)
//   FORM_TOKEN  the Bearer token it requires (none: no check)
//   FORM_FIELD  the file parts' field name without [] (default: files)
// Run with PHP's limits on the command line, e.g.
//   php -d max_file_uploads=20 -d post_max_size=8M -d upload_max_filesize=8M -d display_errors=0 \
//       -S 127.0.0.1:PORT scripts/form-receiver.php
// (display_errors=0, as in production: otherwise PHP prints its post_max_size
// warning into the response and the status cannot be set any more)
// Answers: 401 without the token; 413 when PHP dropped the body (post_max_size: $_FILES and
// $_POST are empty although CONTENT_LENGTH is not); 422 when a file is missing, or its size or
// SHA-256 differs from the manifest part; 200 {"stored":n} or, for an Idempotency-Key seen
// before, 200 {"duplicate": true} without storing anything again.

function answer(int $status, array $body): void {
    http_response_code($status);
    header('Content-Type: application/json');
    echo json_encode($body), "\n";
    exit;
}

// A capture-only station's form (docs/UPLOAD.md, "From a capture-only station"): two age files
// per document, <id>.meta.age then <id>.age, whose pair has the manifest's size and SHA-256
// (SHA-256 of the data file, the metadata file, and the metadata file's length as 8 bytes,
// big-endian). Each is stored as it came, as <id>.age and <id>.meta.age: this back office holds
// no key and opens nothing.
function captured(array $manifest, ?array $files, string $store, string $key, array $keys, string $seen): void {
    $expected = count($manifest['documents']);
    $got = $files === null ? 0 : count((array)$files['name']);
    if ($got !== 2 * $expected) answer(422, ['error' => "the manifest names $expected captured documents, PHP received $got files"]);
    foreach ($manifest['documents'] as $i => $doc) {
        $id = preg_replace('/[^0-9a-f]/', '', $doc['id']);
        [$m, $d] = [2 * $i, 2 * $i + 1];
        if ($files['error'][$m] !== UPLOAD_ERR_OK || $files['error'][$d] !== UPLOAD_ERR_OK) answer(422, ['error' => "document $i: PHP upload error"]);
        if ($files['name'][$m] !== "$id.meta.age" || $files['name'][$d] !== "$id.age") answer(422, ['error' => "document $i: its files are not named for it"]);
        $h = hash_init('sha256');
        hash_update_file($h, $files['tmp_name'][$d]);
        hash_update_file($h, $files['tmp_name'][$m]);
        hash_update($h, pack('J', $files['size'][$m]));
        if ($files['size'][$m] + $files['size'][$d] !== $doc['size'] || hash_final($h) !== $doc['sha256']) {
            answer(422, ['error' => "document $i: its files are not the size and SHA-256 the manifest names"]);
        }
    }
    foreach ($manifest['documents'] as $i => $doc) {
        $id = preg_replace('/[^0-9a-f]/', '', $doc['id']);
        if (file_exists("$store/$id.age")) answer(409, ['error' => "document $id was already stored"]);
        move_uploaded_file($files['tmp_name'][2 * $i], "$store/$id.meta.age");
        move_uploaded_file($files['tmp_name'][2 * $i + 1], "$store/$id.age");
    }
    if ($key !== '') { $keys[$key] = true; file_put_contents($seen, json_encode($keys)); }
    $fields = $_POST;
    unset($fields['manifest']);
    file_put_contents("$store/fields.json", json_encode($fields));
    answer(200, ['stored' => $expected, 'batch' => $manifest['batch'], 'of' => $manifest['of']]);
}

$store = getenv('FORM_STORE') ?: sys_get_temp_dir() . '/form-store';
$token = getenv('FORM_TOKEN') ?: '';
$field = getenv('FORM_FIELD') ?: 'files';
if (!is_dir($store)) mkdir($store, 0700, true);
$log = fopen("$store/requests.log", 'a');
fwrite($log, sprintf("%s %s %s %s\n", $_SERVER['REQUEST_METHOD'], $_SERVER['REQUEST_URI'],
    $_SERVER['CONTENT_LENGTH'] ?? '-', $_SERVER['HTTP_X_VAULT_BATCH'] ?? '-'));

if ($token !== '' && ($_SERVER['HTTP_AUTHORIZATION'] ?? '') !== "Bearer $token") {
    answer(401, ['error' => 'bad or missing token']);
}
if ($_SERVER['REQUEST_METHOD'] !== 'POST') answer(405, ['error' => 'POST only']);

$length = (int)($_SERVER['CONTENT_LENGTH'] ?? 0);
if (empty($_FILES) && empty($_POST) && $length > 0) {
    // What PHP does with a body over post_max_size: it drops all of it.
    answer(413, ['error' => "body of $length bytes is over post_max_size " . ini_get('post_max_size')]);
}

$manifest = json_decode($_POST['manifest'] ?? '', true);
if (!is_array($manifest) || !isset($manifest['documents'])) answer(422, ['error' => 'no manifest part']);

$key = $_SERVER['HTTP_IDEMPOTENCY_KEY'] ?? '';
$seen = "$store/keys.json";
$keys = file_exists($seen) ? json_decode(file_get_contents($seen), true) : [];
if ($key !== '' && isset($keys[$key])) answer(200, ['duplicate' => true, 'stored' => 0]);

$files = $_FILES[$field] ?? null;
if (isset($manifest['captured'])) captured($manifest, $files, $store, $key, $keys, $seen);
$expected = count($manifest['documents']);
$got = $files === null ? 0 : count((array)$files['name']);
if ($got !== $expected) {
    answer(422, ['error' => "the manifest names $expected documents, PHP received $got (max_file_uploads " . ini_get('max_file_uploads') . ')']);
}
foreach ($manifest['documents'] as $i => $doc) {
    if ($files['error'][$i] !== UPLOAD_ERR_OK) answer(422, ['error' => "file $i: PHP upload error " . $files['error'][$i]]);
    if ($files['size'][$i] !== $doc['size']) answer(422, ['error' => "file $i: size {$files['size'][$i]}, manifest {$doc['size']}"]);
    if (hash_file('sha256', $files['tmp_name'][$i]) !== $doc['sha256']) answer(422, ['error' => "file $i: SHA-256 differs from the manifest"]);
}
$names = file_exists("$store/names.json") ? json_decode(file_get_contents("$store/names.json"), true) : [];
foreach ($manifest['documents'] as $i => $doc) {
    $id = preg_replace('/[^0-9a-f]/', '', $doc['id']);
    if (file_exists("$store/$id")) answer(409, ['error' => "document $id was already stored"]);
    move_uploaded_file($files['tmp_name'][$i], "$store/$id");
    $names[$id] = ['php' => $files['name'][$i], 'type' => $files['type'][$i], 'manifest' => $doc['name']];
}
file_put_contents("$store/names.json", json_encode($names, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES));
if ($key !== '') { $keys[$key] = true; file_put_contents($seen, json_encode($keys)); }
$fields = $_POST;
unset($fields['manifest']);
file_put_contents("$store/fields.json", json_encode($fields));
answer(200, ['stored' => $expected, 'batch' => $manifest['batch'], 'of' => $manifest['of']]);
