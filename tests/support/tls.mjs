// A private CA and a certificate it signs for 127.0.0.1, made with openssl
// in `dir`, for tests of an Ironic behind TLS (the CLI's --os-cacert, the
// console server's proxy).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Makes them; `{ ca }` is the CA bundle's path, `key` and `cert` the server's PEM text. */
export function makeCertificates(dir) {
  const openssl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const subject = (cn) => ['-nodes', '-newkey', 'rsa:2048', '-subj', `/CN=${cn}`];
  openssl('req', '-x509', ...subject('ironic-wait test CA'), '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2');
  openssl('req', ...subject('127.0.0.1'), '-keyout', 'server.key', '-out', 'server.csr');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    ...['-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'],
    ...['-out', 'server.pem', '-days', '2', '-extfile', 'san.ext'],
  );
  return { ca: join(dir, 'ca.pem'), key: readFileSync(join(dir, 'server.key')), cert: readFileSync(join(dir, 'server.pem')) };
}
