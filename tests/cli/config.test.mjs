// cli/config.mjs: clouds.yaml / secure.yaml / clouds-public.yaml, OS_* variables and --os-* flags into
// IronicClient options. Every case runs in its own temp directories (cwd, home, system dir) with an
// explicit env object: the real environment and home are never read. The last group runs python's own
// loader (osc-lib's OSC_Config on openstacksdk, from the real-ironic venv, made if missing) on the
// same files and variables and compares, so the precedence is python's and not a guess.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, OS_FLAGS, resolveConfig } from '../../cli/config.mjs';
import { ensureVenv, PYTHON } from '../../scripts/real-ironic.mjs';

const SECRET = 'S3cret-never-shown';

const sandboxes = [];
after(() => Promise.all(sandboxes.map((root) => fs.rm(root, { recursive: true, force: true }))));

/** Fresh cwd, home and system directories; `files` maps 'cwd/clouds.yaml'-style paths to contents. */
async function sandbox(files = {}) {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'iw-config-'));
  sandboxes.push(root);
  const dirs = { cwd: path.join(root, 'cwd'), home: path.join(root, 'home'), system: path.join(root, 'etc') };
  for (const dir of Object.values(dirs)) await fs.mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    const [where, ...rest] = name.split('/');
    const file = where in dirs ? path.join(dirs[where], ...rest) : path.join(root, name);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, text);
  }
  const resolve = ({ flags = {}, env = {} } = {}) =>
    resolveConfig({ flags, env, cwd: dirs.cwd, home: dirs.home, systemDirs: [dirs.system] });
  return { root, ...dirs, resolve };
}

const PASSWORD_CLOUD = `clouds:
  prod:
    auth:
      auth_url: http://keystone.example:5000/v3
      username: alice
      password: ${SECRET}
      project_name: ops
      user_domain_name: Users
      project_domain_name: Projects
    region_name: RegionOne
`;

/** The ConfigError `promise` rejects with (and checks it never shows the secret). */
async function configError(promise) {
  const err = await promise.then(
    () => assert.fail('expected a ConfigError'),
    (e) => e,
  );
  assert.ok(err instanceof ConfigError, `not a ConfigError: ${err?.stack}`);
  assert.ok(!err.message.includes(SECRET) && !String(err.stack).includes(SECRET), 'secret in the error');
  return err.message;
}

test('OS_FLAGS: every flag is --os-*, keys and variables unique, secrets marked', () => {
  assert.equal(new Set(OS_FLAGS.map((o) => o.key)).size, OS_FLAGS.length);
  assert.equal(new Set(OS_FLAGS.map((o) => o.env)).size, OS_FLAGS.length);
  for (const o of OS_FLAGS) {
    assert.match(o.flag, /^--os-[a-z-]+$/);
    assert.equal(o.env, o.flag.slice(2).toUpperCase().replaceAll('-', '_'));
  }
  assert.deepEqual(
    OS_FLAGS.filter((o) => o.secret)
      .map((o) => o.key)
      .sort(),
    ['applicationCredentialSecret', 'password', 'token'],
  );
  for (const name of [
    'OS_AUTH_TYPE',
    'OS_AUTH_URL',
    'OS_USERNAME',
    'OS_PASSWORD',
    'OS_PROJECT_NAME',
    'OS_USER_DOMAIN_NAME',
    'OS_PROJECT_DOMAIN_NAME',
    'OS_APPLICATION_CREDENTIAL_ID',
    'OS_APPLICATION_CREDENTIAL_SECRET',
    'OS_TOKEN',
    'OS_ENDPOINT',
    'OS_BAREMETAL_API_VERSION',
    'OS_REGION_NAME',
    'OS_INTERFACE',
    'OS_CLOUD',
  ]) {
    assert.ok(
      OS_FLAGS.some((o) => o.env === name),
      name,
    );
  }
});

test('clouds.yaml: a cloud by OS_CLOUD and by --os-cloud, secure.yaml merged into it', async () => {
  const box = await sandbox({
    'cwd/clouds.yaml': PASSWORD_CLOUD.replace(`      password: ${SECRET}\n`, ''),
    'home/.config/openstack/secure.yaml': `clouds:\n  prod:\n    auth:\n      password: ${SECRET}\n`,
  });
  const expected = {
    client: {
      region: 'RegionOne',
      auth: {
        type: 'password',
        authUrl: 'http://keystone.example:5000/v3',
        username: 'alice',
        password: SECRET,
        userDomainName: 'Users',
        projectName: 'ops',
        projectDomainName: 'Projects',
      },
    },
    cloud: 'prod',
  };
  assert.deepEqual(await box.resolve({ env: { OS_CLOUD: 'prod' } }), expected);
  assert.deepEqual(await box.resolve({ flags: { cloud: 'prod' }, env: { OS_CLOUD: 'other' } }), expected);
});

test('search order: OS_CLIENT_CONFIG_FILE, cwd, XDG_CONFIG_HOME, ~/.config/openstack, system; yaml, yml, json', async () => {
  const cloud = (url) => `clouds:\n  c:\n    auth_type: none\n    baremetal_endpoint_override: ${url}\n`;
  const box = await sandbox({
    'explicit.yaml': cloud('http://explicit'),
    'cwd/clouds.yml': cloud('http://cwd-yml'),
    'cwd/clouds.json': JSON.stringify({ clouds: { c: { auth_type: 'none', endpoint: 'http://cwd-json' } } }),
    'xdg/openstack/clouds.yaml': cloud('http://xdg'),
    'home/.config/openstack/clouds.yaml': cloud('http://home'),
    'etc/clouds.yaml': cloud('http://system'),
  });
  const endpoint = async (env) => (await box.resolve({ env: { OS_CLOUD: 'c', ...env } })).client.endpoint;
  assert.equal(await endpoint({ OS_CLIENT_CONFIG_FILE: path.join(box.root, 'explicit.yaml') }), 'http://explicit');
  assert.equal(await endpoint({}), 'http://cwd-yml');
  await fs.rm(path.join(box.cwd, 'clouds.yml'));
  assert.equal(await endpoint({}), 'http://cwd-json');
  await fs.rm(path.join(box.cwd, 'clouds.json'));
  assert.equal(await endpoint({ XDG_CONFIG_HOME: path.join(box.root, 'xdg') }), 'http://xdg');
  assert.equal(await endpoint({}), 'http://home');
  await fs.rm(path.join(box.home, '.config/openstack/clouds.yaml'));
  assert.equal(await endpoint({}), 'http://system');
  // A missing OS_CLIENT_CONFIG_FILE falls through to the search path, as in python.
  assert.equal(await endpoint({ OS_CLIENT_CONFIG_FILE: path.join(box.root, 'absent.yaml') }), 'http://system');
});

test('only the first clouds.yaml counts: a cloud in a later one is not found', async () => {
  const box = await sandbox({
    'cwd/clouds.yaml': 'clouds:\n  here: {auth_type: none, endpoint: "http://a"}\n',
    'home/.config/openstack/clouds.yaml': 'clouds:\n  there: {auth_type: none, endpoint: "http://b"}\n',
  });
  assert.equal(await configError(box.resolve({ env: { OS_CLOUD: 'there' } })), 'Cloud there was not found.');
});

test('secure.yaml is found on its own search path and deep-merged (OS_CLIENT_SECURE_FILE first)', async () => {
  const box = await sandbox({
    'cwd/clouds.yaml': 'clouds:\n  c:\n    auth: {auth_url: "http://k/v3", username: u, project_id: p1}\n' + '    region_name: R1\n',
    'etc/secure.yaml': `clouds:\n  c:\n    auth: {password: ${SECRET}, project_id: p2}\n    interface: internal\n`,
    'other-secure.yaml': 'clouds:\n  c:\n    auth: {password: other}\n',
  });
  const { client } = await box.resolve({ env: { OS_CLOUD: 'c' } });
  assert.deepEqual(client, {
    region: 'R1',
    interface: 'internal',
    auth: { type: 'password', authUrl: 'http://k/v3', username: 'u', password: SECRET, projectId: 'p2', userDomainId: 'default' },
  });
  const other = await box.resolve({ env: { OS_CLOUD: 'c', OS_CLIENT_SECURE_FILE: path.join(box.root, 'other-secure.yaml') } });
  assert.equal(other.client.auth.password, 'other');
});

test('clouds-public.yaml: a profile is laid under the cloud; an unknown profile is an error', async () => {
  const box = await sandbox({
    'cwd/clouds.yaml': `clouds:\n  mine:\n    profile: acme\n    auth: {username: u, password: ${SECRET}}\n  lost:\n    profile: nowhere\n`,
    'home/.config/openstack/clouds-public.yaml':
      'public-clouds:\n  acme:\n    auth: {auth_url: "https://acme/v3"}\n' + '    regions: [east, west]\n    interface: internal\n',
  });
  const { client } = await box.resolve({ env: { OS_CLOUD: 'mine' } });
  assert.deepEqual(client, {
    region: 'east',
    interface: 'internal',
    auth: { type: 'password', authUrl: 'https://acme/v3', username: 'u', password: SECRET, userDomainId: 'default' },
  });
  assert.match(
    await configError(box.resolve({ env: { OS_CLOUD: 'lost' } })),
    /^Couldn't find the vendor profile nowhere for the cloud lost \(.*clouds-public\.yaml only/,
  );
});

test('precedence: --os-* flag > OS_* variable > clouds.yaml, key by key', async () => {
  const box = await sandbox({ 'cwd/clouds.yaml': PASSWORD_CLOUD });
  const env = { OS_CLOUD: 'prod', OS_PROJECT_NAME: 'env-project', OS_INTERFACE: 'internal', OS_USERNAME: 'bob' };
  const flags = { projectName: 'flag-project', endpoint: 'http://ironic:6385', microversion: '1.78' };
  const { client, cloud } = await box.resolve({ flags, env });
  assert.equal(cloud, 'prod');
  assert.deepEqual(client, {
    endpoint: 'http://ironic:6385',
    region: 'RegionOne',
    interface: 'internal',
    microversion: '1.78',
    auth: {
      type: 'password',
      authUrl: 'http://keystone.example:5000/v3',
      username: 'bob',
      password: SECRET,
      userDomainName: 'Users',
      projectName: 'flag-project',
      projectDomainName: 'Projects',
    },
  });
  // Empty values count as not given.
  const empty = await box.resolve({ flags: { projectName: '' }, env: { OS_CLOUD: 'prod', OS_PROJECT_NAME: '' } });
  assert.equal(empty.client.auth.projectName, 'ops');
});

test('which cloud: the environment alone, else the only cloud; OS_REGION_NAME alone does not count', async () => {
  const box = await sandbox({ 'cwd/clouds.yaml': PASSWORD_CLOUD });
  const only = await box.resolve({ env: { OS_REGION_NAME: 'RegionOne' } });
  assert.equal(only.cloud, 'prod');
  assert.equal(only.client.auth.username, 'alice');
  const fromEnv = await box.resolve({ env: { OS_ENDPOINT: 'http://ironic:6385' } });
  assert.deepEqual(fromEnv, { client: { endpoint: 'http://ironic:6385', auth: { type: 'none' } }, cloud: null });
  const two = await sandbox({ 'cwd/clouds.yaml': `${PASSWORD_CLOUD}  test: {auth_type: none}\n` });
  assert.match(await configError(two.resolve()), /^The Bare Metal API endpoint cannot be detected/);
});

test('regions: the first listed by default, values merged, an unlisted one refused', async () => {
  const box = await sandbox({
    'cwd/clouds.yaml':
      'clouds:\n  c:\n    auth_type: none\n    regions:\n      - name: R1\n' +
      '        values: {baremetal_endpoint_override: "http://r1"}\n      - name: R2\n' +
      '        values: {baremetal_endpoint_override: "http://r2", interface: admin}\n',
  });
  assert.deepEqual((await box.resolve({ env: { OS_CLOUD: 'c' } })).client, { endpoint: 'http://r1', region: 'R1', auth: { type: 'none' } });
  assert.deepEqual((await box.resolve({ env: { OS_CLOUD: 'c', OS_REGION_NAME: 'R2' } })).client, {
    endpoint: 'http://r2',
    region: 'R2',
    interface: 'admin',
    auth: { type: 'none' },
  });
  assert.equal(
    await configError(box.resolve({ flags: { region: 'R3' }, env: { OS_CLOUD: 'c' } })),
    'Region R3 is not a valid region name for cloud c. Valid choices are R1,R2. ' + 'Please note that region names are case sensitive.',
  );
});

test('auth types: each one, explicit and inferred', async () => {
  const box = await sandbox();
  const client = async (env) => (await box.resolve({ env })).client;
  const url = 'http://k:5000';
  assert.deepEqual(await client({ OS_AUTH_URL: url, OS_USER_ID: 'uid', OS_PASSWORD: SECRET, OS_SYSTEM_SCOPE: 'all' }), {
    auth: { type: 'password', authUrl: url, userId: 'uid', password: SECRET, systemScope: 'all' },
  });
  assert.deepEqual(
    await client({ OS_AUTH_TYPE: 'v3password', OS_AUTH_URL: url, OS_USERNAME: 'u', OS_PASSWORD: SECRET, OS_DOMAIN_ID: 'd1' }),
    { auth: { type: 'password', authUrl: url, username: 'u', password: SECRET, domainId: 'd1', userDomainId: 'default' } },
  );
  assert.deepEqual(await client({ OS_AUTH_URL: url, OS_TOKEN: SECRET, OS_PROJECT_ID: 'p' }), {
    auth: { type: 'token', authUrl: url, token: SECRET, projectId: 'p' },
  });
  assert.deepEqual(await client({ OS_AUTH_TYPE: 'v3token', OS_AUTH_URL: url, OS_TOKEN: SECRET }), {
    auth: { type: 'token', authUrl: url, token: SECRET },
  });
  assert.deepEqual(
    await client({
      OS_AUTH_URL: url,
      OS_APPLICATION_CREDENTIAL_ID: 'ac',
      OS_APPLICATION_CREDENTIAL_SECRET: SECRET,
      OS_ENDPOINT: 'http://i',
    }),
    {
      endpoint: 'http://i',
      auth: { type: 'v3applicationcredential', authUrl: url, applicationCredentialSecret: SECRET, applicationCredentialId: 'ac' },
    },
  );
  assert.deepEqual(
    await client({
      OS_AUTH_TYPE: 'v3applicationcredential',
      OS_AUTH_URL: url,
      OS_USERNAME: 'u',
      OS_USER_DOMAIN_NAME: 'D',
      OS_APPLICATION_CREDENTIAL_NAME: 'n',
      OS_APPLICATION_CREDENTIAL_SECRET: SECRET,
    }),
    {
      auth: {
        type: 'v3applicationcredential',
        authUrl: url,
        applicationCredentialSecret: SECRET,
        applicationCredentialName: 'n',
        username: 'u',
        userDomainName: 'D',
      },
    },
  );
  assert.deepEqual(
    await client({
      OS_AUTH_URL: url,
      OS_USERNAME: 'u',
      OS_APPLICATION_CREDENTIAL_NAME: 'n',
      OS_APPLICATION_CREDENTIAL_SECRET: SECRET,
      OS_DEFAULT_DOMAIN: 'dd',
    }),
    {
      auth: {
        type: 'v3applicationcredential',
        authUrl: url,
        applicationCredentialSecret: SECRET,
        applicationCredentialName: 'n',
        username: 'u',
        userDomainId: 'dd',
      },
    },
  );
  assert.deepEqual(
    await client({ OS_AUTH_URL: url, OS_USER_ID: 'uid', OS_APPLICATION_CREDENTIAL_NAME: 'n', OS_APPLICATION_CREDENTIAL_SECRET: SECRET }),
    {
      auth: {
        type: 'v3applicationcredential',
        authUrl: url,
        applicationCredentialSecret: SECRET,
        applicationCredentialName: 'n',
        userId: 'uid',
      },
    },
  );
  assert.deepEqual(await client({ OS_AUTH_TYPE: 'http_basic', OS_USERNAME: 'u', OS_PASSWORD: SECRET, OS_ENDPOINT: 'http://i' }), {
    endpoint: 'http://i',
    auth: { type: 'http_basic', username: 'u', password: SECRET },
  });
  assert.deepEqual(await client({ OS_AUTH_TYPE: 'none', OS_AUTH_URL: url, OS_ENDPOINT: 'http://i' }), {
    endpoint: 'http://i',
    auth: { type: 'none' },
  });
  // admin_token (token_endpoint): a ready token for the given endpoint, the library's `token` option.
  assert.deepEqual(await client({ OS_TOKEN: SECRET, OS_ENDPOINT: 'http://i' }), { endpoint: 'http://i', token: SECRET });
  assert.deepEqual(await client({ OS_AUTH_TYPE: 'token_endpoint', OS_TOKEN: SECRET, OS_ENDPOINT: 'http://i' }), {
    endpoint: 'http://i',
    token: SECRET,
  });
});

test('default domain: default, OS_DEFAULT_DOMAIN, --os-default-domain, keystoneauth default-domain-id/-name', async () => {
  const box = await sandbox();
  const base = { OS_AUTH_URL: 'http://k/v3', OS_USERNAME: 'u', OS_PASSWORD: SECRET, OS_PROJECT_NAME: 'p' };
  const domains = async (env, flags) => {
    const { auth } = (await box.resolve({ env: { ...base, ...env }, flags })).client;
    return Object.fromEntries(Object.entries(auth).filter(([k]) => /Domain/.test(k)));
  };
  assert.deepEqual(await domains({}), { userDomainId: 'default', projectDomainId: 'default' });
  assert.deepEqual(await domains({ OS_DEFAULT_DOMAIN: 'd-env' }), { userDomainId: 'd-env', projectDomainId: 'd-env' });
  assert.deepEqual(await domains({ OS_DEFAULT_DOMAIN: 'd-env' }, { defaultDomain: 'd-flag' }), {
    userDomainId: 'd-flag',
    projectDomainId: 'd-flag',
  });
  assert.deepEqual(await domains({ OS_DEFAULT_DOMAIN_NAME: 'Named' }), { userDomainName: 'Named', projectDomainName: 'Named' });
  assert.deepEqual(await domains({ OS_USER_DOMAIN_NAME: 'U', OS_DEFAULT_DOMAIN: 'd' }), { userDomainName: 'U', projectDomainId: 'd' });
  // A domain given with a project is the user's and the project's domain (openstacksdk's rule).
  assert.deepEqual(await domains({ OS_DOMAIN_NAME: 'Both' }), { userDomainName: 'Both', projectDomainName: 'Both' });
  // With a project id or a user id no domain is needed, none is added.
  const ids = (await box.resolve({ env: { OS_AUTH_URL: 'http://k/v3', OS_USER_ID: 'u', OS_PASSWORD: SECRET, OS_PROJECT_ID: 'p' } })).client
    .auth;
  assert.deepEqual(ids, { type: 'password', authUrl: 'http://k/v3', userId: 'u', password: SECRET, projectId: 'p' });
});

test('interface and microversion values', async () => {
  const box = await sandbox();
  const base = { OS_ENDPOINT: 'http://i' };
  const client = async (env) => (await box.resolve({ env: { ...base, ...env } })).client;
  assert.equal((await client({ OS_INTERFACE: 'internalURL' })).interface, 'internal');
  assert.equal((await client({ OS_BAREMETAL_API_VERSION: '1' })).microversion, 'latest');
  assert.equal((await client({ OS_BAREMETAL_API_VERSION: 'latest' })).microversion, 'latest');
  assert.equal((await client({ OS_BAREMETAL_API_VERSION: '1.95' })).microversion, '1.95');
  assert.match(await configError(client({ OS_INTERFACE: 'private' })), /^Invalid interface "private"/);
  assert.match(await configError(client({ OS_INTERFACE: 'constructor' })), /^Invalid interface "constructor"/);
  assert.match(await configError(client({ OS_BAREMETAL_API_VERSION: '2.1' })), /^Invalid baremetal API version "2.1"/);
  const file = await sandbox({
    'cwd/clouds.yaml':
      'clouds:\n  c:\n    auth_type: none\n    endpoint: http://i\n' +
      '    baremetal_default_microversion: "1.80"\n    baremetal_interface: admin\n    interface: public\n' +
      '  major:\n    auth_type: none\n    endpoint: http://i\n    baremetal_api_version: 1\n' +
      '  unquoted:\n    auth_type: none\n    endpoint: http://i\n    baremetal_default_microversion: 1.80\n',
  });
  assert.deepEqual((await file.resolve({ env: { OS_CLOUD: 'c' } })).client, {
    endpoint: 'http://i',
    interface: 'admin',
    microversion: '1.80',
    auth: { type: 'none' },
  });
  assert.equal((await file.resolve({ env: { OS_CLOUD: 'major' } })).client.microversion, 'latest');
  assert.match(
    await configError(file.resolve({ env: { OS_CLOUD: 'unquoted' } })),
    /^baremetal_default_microversion in clouds\.yaml must be quoted/,
  );
});

test('legacy and dashed keys in clouds.yaml: tenant_name, auth_token, auth-url, numbers as strings', async () => {
  const box = await sandbox({
    'cwd/clouds.yaml':
      `clouds:\n  c:\n    auth:\n      auth-url: http://k/v3\n` +
      `      auth_token: ${SECRET}\n      tenant_name: t\n      project-domain-id: 42\n  d:\n    auth_type: password\n` +
      `    auth: {auth_url: "http://k/v3", username: u, password: 12345, project_id: 0123}\n`,
  });
  assert.deepEqual((await box.resolve({ env: { OS_CLOUD: 'c' } })).client, {
    auth: { type: 'token', authUrl: 'http://k/v3', token: SECRET, projectName: 't', projectDomainId: '42' },
  });
  // YAML 1.1 as PyYAML reads it: 0123 is octal.
  assert.deepEqual((await box.resolve({ env: { OS_CLOUD: 'd' } })).client.auth, {
    type: 'password',
    authUrl: 'http://k/v3',
    username: 'u',
    password: '12345',
    projectId: '83',
    userDomainId: 'default',
  });
});

test("errors: python's messages, and no secret in any of them", async () => {
  const box = await sandbox({
    'cwd/clouds.yaml':
      `clouds:\n  bad-type:\n    auth_type: oidc-magic\n    auth: {password: ${SECRET}}\n` +
      `  no-url:\n    auth: {username: u, password: ${SECRET}}\n  not-a-map: 7\n`,
  });
  const msg = (opts) => configError(box.resolve(opts));
  assert.equal(await msg({ env: { OS_CLOUD: 'nope' } }), 'Cloud nope was not found.');
  assert.match(
    await msg({ env: { OS_CLOUD: 'bad-type' } }),
    /^An invalid auth-type was specified: oidc-magic\. Valid choices are: password,v3password,token,/,
  );
  assert.match(
    await msg({ env: { OS_AUTH_TYPE: 'toString', OS_ENDPOINT: 'http://i' } }),
    /^An invalid auth-type was specified: toString\./,
  );
  assert.equal(await msg({ env: { OS_CLOUD: 'toString' } }), 'Cloud toString was not found.');
  assert.equal(await msg({ env: { OS_CLOUD: 'no-url' } }), 'Auth plugin requires parameters which were not given: auth_url');
  assert.match(await msg({ env: { OS_CLOUD: 'not-a-map' } }), /^Cloud not-a-map in .*clouds\.yaml is not a mapping\.$/);
  assert.equal(await msg({ env: { OS_AUTH_URL: 'http://k', OS_USERNAME: 'u' } }), 'password is a required attribute');
  assert.equal(
    await msg({ env: { OS_AUTH_TYPE: 'token', OS_AUTH_URL: 'http://k' } }),
    'Auth plugin requires parameters which were not given: token',
  );
  assert.equal(
    await msg({ env: { OS_AUTH_TYPE: 'v3applicationcredential', OS_AUTH_URL: 'http://k', OS_APPLICATION_CREDENTIAL_SECRET: SECRET } }),
    'You must provide either an application credential ID or an application credential name and user.',
  );
  assert.equal(
    await msg({ env: { OS_AUTH_URL: 'http://k', OS_APPLICATION_CREDENTIAL_ID: 'a' } }),
    'Auth plugin requires parameters which were not given: application_credential_secret',
  );
  assert.equal(
    await msg({ env: { OS_AUTH_TYPE: 'http_basic', OS_USERNAME: 'u', OS_ENDPOINT: 'http://i' } }),
    'Auth plugin requires parameters which were not given: password',
  );
  assert.match(await msg({ env: { OS_AUTH_TYPE: 'none' } }), /^The Bare Metal API endpoint cannot be detected/);
  assert.equal(await msg({ flags: { osPassword: SECRET } }), 'Unknown configuration option: osPassword');

  // A clouds.yaml that does not parse: the file and the position, never its text.
  const broken = await sandbox({ 'cwd/clouds.yaml': `clouds:\n  c:\n    auth:\n      password: ${SECRET}\n     bad: [\n` });
  assert.match(await configError(broken.resolve({ env: { OS_CLOUD: 'c' } })), /^Cannot parse .*clouds\.yaml at line \d+, column \d+\.$/);
  const badJson = await sandbox({ 'cwd/clouds.json': `{"clouds": {"c": {"auth": {"password": "${SECRET}"}}` });
  assert.match(await configError(badJson.resolve({ env: { OS_CLOUD: 'c' } })), /^Cannot parse .*clouds\.json\.$/);
});

// ---- differential: python's loader on the same files and variables ----

// osc-lib's OSC_Config (python-openstackclient's loader: openstacksdk plus OSC's auth-type choice and
// default-domain rule), with openstacksdk's argparse registration (the `baremetal` command's) and OSC's
// --os-default-domain, validated as a command needing auth would be.
const PYTHON_LOADER = `
import argparse, json, sys
from osc_lib.cli import client_config
from osc_lib import utils
argv = json.loads(sys.argv[1])
try:
    config = client_config.OSC_Config(override_defaults={'interface': 'public', 'auth_type': None})
    parser = argparse.ArgumentParser()
    parser.add_argument('--os-default-domain', dest='default_domain',
                        default=utils.env('OS_DEFAULT_DOMAIN', default='default'))
    parser.add_argument('--os-identity-api-version', default=utils.env('OS_IDENTITY_API_VERSION'))
    config.register_argparse_arguments(parser, argv)
    options, _ = parser.parse_known_args(argv)
    # OSC's --os-interface has no default of its own (keystoneauth's, registered above, says 'public'
    # and would hide clouds.yaml's interface); OSC's default 'public' comes from override_defaults.
    peek = argparse.ArgumentParser(add_help=False)
    peek.add_argument('--os-interface', default=utils.env('OS_INTERFACE'))
    options.os_interface = peek.parse_known_args(argv)[0].os_interface
    region = config.get_one(argparse=options, validate=True)
except Exception as e:
    print(json.dumps({'error': str(e)}))
    sys.exit(0)
c = region.config
print(json.dumps({'cloud': region.name, 'type': c['auth_type'], 'auth': c['auth'],
                  'region': region.region_name or None, 'interface': c.get('interface'),
                  'endpoint': region.get_endpoint('baremetal')}))
`;

function runPython({ cwd, home, env, argv = [] }) {
  return new Promise((resolve, reject) => {
    execFile(
      PYTHON,
      ['-c', PYTHON_LOADER, JSON.stringify(argv)],
      { cwd, env: { HOME: home, PATH: '/usr/bin:/bin', ...env }, timeout: 60_000 },
      (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim().split('\n').pop()))),
    );
  });
}

const CAMEL = Object.fromEntries(OS_FLAGS.filter((o) => o.file).map((o) => [o.file, o.key]));

/** Python's result in resolveConfig's shape. */
function fromPython(py) {
  if (py.error) return { error: py.error };
  const auth = {};
  for (const [key, value] of Object.entries(py.auth)) if (key !== 'endpoint') auth[CAMEL[key] ?? key] = value;
  // Python leaves auth_type 'password' (keystoneauth's generic plugin); the domains it adds where none is
  // needed (user_domain_id beside a user_id, project_domain_id with no project) are dropped here.
  if (auth.userId !== undefined && auth.username === undefined) delete auth.userDomainId;
  if (auth.projectName === undefined) delete auth.projectDomainId;
  const client = {};
  if (py.endpoint) client.endpoint = py.endpoint;
  if (py.region) client.region = py.region;
  if (py.interface && py.interface !== 'public') client.interface = py.interface; // 'public': the library's default
  client.auth = { type: py.type.replace(/^v3(password|token)$/, '$1'), ...auth };
  return { client, cloud: py.cloud === 'envvars' || py.cloud === 'defaults' || py.cloud === '' ? null : py.cloud };
}

const DIFFERENTIAL = [
  {
    name: 'OS_CLOUD with secure.yaml, a variable and a flag over the file',
    files: {
      'cwd/clouds.yaml': PASSWORD_CLOUD.replace(`      password: ${SECRET}\n`, ''),
      'home/.config/openstack/secure.yaml': `clouds:\n  prod:\n    auth:\n      password: ${SECRET}\n`,
    },
    env: { OS_CLOUD: 'prod', OS_USERNAME: 'bob', OS_PROJECT_NAME: 'env-project' },
    argv: ['--os-project-name', 'flag-project'],
    flags: { projectName: 'flag-project' },
  },
  {
    name: 'flags over variables over clouds.yaml for the URL, region and interface',
    files: {
      'cwd/clouds.yaml':
        'clouds:\n  f:\n    auth:\n      auth_url: http://file/v3\n      username: fu\n' +
        `      password: ${SECRET}\n      project_id: pf\n    interface: public\n    regions: [R1, R2]\n` +
        '    identity_api_version: 3\n',
    },
    env: { OS_CLOUD: 'f', OS_AUTH_URL: 'http://env/v3', OS_INTERFACE: 'internal', OS_REGION_NAME: 'R1', OS_USER_ID: 'env-uid' },
    argv: ['--os-interface', 'admin', '--os-region-name', 'R2', '--os-auth-url', 'http://flag/v3'],
    flags: { interface: 'admin', region: 'R2', authUrl: 'http://flag/v3' },
  },
  {
    name: 'the variables alone, default domain from OS_DEFAULT_DOMAIN',
    files: { 'cwd/clouds.yaml': PASSWORD_CLOUD },
    env: {
      OS_AUTH_URL: 'http://k:5000/v3',
      OS_USERNAME: 'u',
      OS_PASSWORD: SECRET,
      OS_PROJECT_NAME: 'p',
      OS_DEFAULT_DOMAIN: 'dd',
      OS_IDENTITY_API_VERSION: '3',
      OS_INTERFACE: 'internal',
      OS_REGION_NAME: 'RegionTwo',
    },
  },
  {
    name: 'the only cloud, found in ~/.config/openstack, default domain',
    files: {
      'home/.config/openstack/clouds.yaml':
        'clouds:\n  lone:\n    auth:\n      auth_url: http://k/v3\n' +
        `      username: u\n      password: ${SECRET}\n      project_name: p\n    identity_api_version: 3\n`,
    },
    env: {},
  },
  {
    name: 'OS_CLIENT_CONFIG_FILE before the cwd; domain_name with a project; region values',
    files: {
      'cwd/clouds.yaml': 'clouds:\n  c:\n    auth_type: none\n',
      'explicit.yaml':
        'clouds:\n  c:\n    auth:\n      auth_url: http://k/v3\n      username: u\n' +
        `      password: ${SECRET}\n      project_name: p\n      domain_name: Shared\n    regions:\n` +
        '      - R1\n      - name: R2\n        values: {interface: admin}\n',
    },
    env: { OS_CLOUD: 'c', OS_CLIENT_CONFIG_FILE: '<root>/explicit.yaml', OS_REGION_NAME: 'R2' },
  },
  {
    name: "token by variables over a password cloud's type",
    files: { 'cwd/clouds.yaml': 'clouds:\n  t:\n    auth_type: token\n    auth: {auth_url: "http://k/v3", project_id: pid}\n' },
    env: { OS_CLOUD: 't', OS_TOKEN: SECRET, OS_USERNAME: 'ignored' },
  },
  {
    name: 'application credential by id from clouds.yaml, secret from the variable',
    files: {
      'cwd/clouds.yml':
        'clouds:\n  ac:\n    auth_type: v3applicationcredential\n' +
        '    auth: {auth_url: "http://k/v3", application_credential_id: acid}\n',
    },
    env: { OS_CLOUD: 'ac', OS_APPLICATION_CREDENTIAL_SECRET: SECRET },
  },
  {
    name: 'none with an endpoint override from clouds.yaml',
    files: { 'cwd/clouds.yaml': 'clouds:\n  s:\n    auth_type: none\n    baremetal_endpoint_override: http://ironic:6385\n' },
    env: { OS_CLOUD: 's' },
  },
  {
    name: 'legacy keys and YAML 1.1 numbers',
    files: {
      'cwd/clouds.yaml':
        'clouds:\n  l:\n    auth:\n      auth-url: http://k/v3\n      username: u\n' +
        '      password: 12345\n      tenant_name: t\n      project_domain_id: 0123\n    identity_api_version: 3\n',
    },
    env: { OS_CLOUD: 'l' },
  },
];

await ensureVenv();
for (const c of DIFFERENTIAL) {
  test(`same as python's loader: ${c.name}`, async () => {
    const box = await sandbox(c.files);
    const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, v.replace('<root>', box.root)]));
    const py = fromPython(await runPython({ cwd: box.cwd, home: box.home, env, argv: c.argv }));
    const js = await box.resolve({ env, flags: c.flags });
    assert.deepEqual(js, py);
  });
}

test("same as python's loader: a region the cloud does not list", async () => {
  const box = await sandbox({
    'cwd/clouds.yaml': 'clouds:\n  c:\n    auth_type: none\n    endpoint: http://i\n' + '    regions: [R1, R2]\n',
  });
  const env = { OS_CLOUD: 'c', OS_REGION_NAME: 'R3' };
  const py = await runPython({ cwd: box.cwd, home: box.home, env });
  assert.match(py.error, /^Region R3 is not a valid region name/);
  assert.equal(await configError(box.resolve({ env })), py.error);
});

test("same as python's loader: a cloud that is not there", async () => {
  const box = await sandbox({ 'cwd/clouds.yaml': PASSWORD_CLOUD });
  const py = await runPython({ cwd: box.cwd, home: box.home, env: { OS_CLOUD: 'nope' } });
  assert.equal(await configError(box.resolve({ env: { OS_CLOUD: 'nope' } })), py.error);
});
