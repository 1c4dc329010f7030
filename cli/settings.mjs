// OpenStack settings into IronicClient constructor options, as python-openstackclient reads them
// (osc-lib on openstacksdk's loader): the --os-* options and their OS_* variables, and what each auth
// type needs. Plain JS with no Node import, so that an edge Worker can read its environment with it
// (`optionsFromEnvironment`); cli/config.mjs adds clouds.yaml and the precedence of flags over files.
// Error messages never contain a configured value, so never a secret.

/**
 * Every --os-* option the CLI accepts. `key` is the key in resolveConfig's `flags`, `env` the variable,
 * `file` the clouds.yaml key (inside `auth:` when `inAuth`), `secret` marks values never to print.
 */
export const OS_FLAGS = [
  { flag: '--os-cloud', key: 'cloud', env: 'OS_CLOUD', file: null, help: 'Cloud name in clouds.yaml' },
  {
    flag: '--os-auth-type',
    key: 'authType',
    env: 'OS_AUTH_TYPE',
    file: 'auth_type',
    help: 'password, v3applicationcredential, token, none, http_basic (or admin_token)',
  },
  { flag: '--os-auth-url', key: 'authUrl', env: 'OS_AUTH_URL', file: 'auth_url', inAuth: true, help: 'Keystone URL' },
  { flag: '--os-username', key: 'username', env: 'OS_USERNAME', file: 'username', inAuth: true, help: 'User name' },
  { flag: '--os-user-id', key: 'userId', env: 'OS_USER_ID', file: 'user_id', inAuth: true, help: 'User ID' },
  { flag: '--os-password', key: 'password', env: 'OS_PASSWORD', file: 'password', inAuth: true, secret: true, help: 'Password' },
  {
    flag: '--os-user-domain-name',
    key: 'userDomainName',
    env: 'OS_USER_DOMAIN_NAME',
    file: 'user_domain_name',
    inAuth: true,
    help: "User's domain name",
  },
  {
    flag: '--os-user-domain-id',
    key: 'userDomainId',
    env: 'OS_USER_DOMAIN_ID',
    file: 'user_domain_id',
    inAuth: true,
    help: "User's domain ID",
  },
  {
    flag: '--os-project-name',
    key: 'projectName',
    env: 'OS_PROJECT_NAME',
    file: 'project_name',
    inAuth: true,
    help: 'Project to scope to, by name',
  },
  { flag: '--os-project-id', key: 'projectId', env: 'OS_PROJECT_ID', file: 'project_id', inAuth: true, help: 'Project to scope to, by ID' },
  {
    flag: '--os-project-domain-name',
    key: 'projectDomainName',
    env: 'OS_PROJECT_DOMAIN_NAME',
    file: 'project_domain_name',
    inAuth: true,
    help: "Project's domain name",
  },
  {
    flag: '--os-project-domain-id',
    key: 'projectDomainId',
    env: 'OS_PROJECT_DOMAIN_ID',
    file: 'project_domain_id',
    inAuth: true,
    help: "Project's domain ID",
  },
  {
    flag: '--os-domain-name',
    key: 'domainName',
    env: 'OS_DOMAIN_NAME',
    file: 'domain_name',
    inAuth: true,
    help: 'Domain to scope to by name; with a project: the user and project domain',
  },
  {
    flag: '--os-domain-id',
    key: 'domainId',
    env: 'OS_DOMAIN_ID',
    file: 'domain_id',
    inAuth: true,
    help: 'Domain to scope to by ID; with a project: the user and project domain',
  },
  {
    flag: '--os-system-scope',
    key: 'systemScope',
    env: 'OS_SYSTEM_SCOPE',
    file: 'system_scope',
    inAuth: true,
    help: "System scope ('all')",
  },
  {
    flag: '--os-default-domain',
    key: 'defaultDomain',
    env: 'OS_DEFAULT_DOMAIN',
    file: 'default_domain',
    help: "Domain ID for a user or project given by name without a domain (default 'default')",
  },
  {
    flag: '--os-default-domain-id',
    key: 'defaultDomainId',
    env: 'OS_DEFAULT_DOMAIN_ID',
    file: 'default_domain_id',
    inAuth: true,
    help: 'As --os-default-domain, before it',
  },
  {
    flag: '--os-default-domain-name',
    key: 'defaultDomainName',
    env: 'OS_DEFAULT_DOMAIN_NAME',
    file: 'default_domain_name',
    inAuth: true,
    help: 'As --os-default-domain, by name, before it',
  },
  {
    flag: '--os-application-credential-id',
    key: 'applicationCredentialId',
    env: 'OS_APPLICATION_CREDENTIAL_ID',
    file: 'application_credential_id',
    inAuth: true,
    help: 'Application credential ID',
  },
  {
    flag: '--os-application-credential-name',
    key: 'applicationCredentialName',
    env: 'OS_APPLICATION_CREDENTIAL_NAME',
    file: 'application_credential_name',
    inAuth: true,
    help: 'Application credential name (with the user)',
  },
  {
    flag: '--os-application-credential-secret',
    key: 'applicationCredentialSecret',
    env: 'OS_APPLICATION_CREDENTIAL_SECRET',
    file: 'application_credential_secret',
    inAuth: true,
    secret: true,
    help: 'Application credential secret',
  },
  { flag: '--os-token', key: 'token', env: 'OS_TOKEN', file: 'token', inAuth: true, secret: true, help: 'Keystone token' },
  {
    flag: '--os-endpoint',
    key: 'endpoint',
    env: 'OS_ENDPOINT',
    file: 'baremetal_endpoint_override',
    help: 'Ironic URL; wins over the catalog',
  },
  { flag: '--os-region-name', key: 'region', env: 'OS_REGION_NAME', file: 'region_name', help: 'Catalog region' },
  {
    flag: '--os-interface',
    key: 'interface',
    env: 'OS_INTERFACE',
    file: 'interface',
    help: 'Catalog interface: public (default), internal, admin',
  },
  {
    flag: '--os-cacert',
    key: 'cacert',
    env: 'OS_CACERT',
    file: 'cacert',
    metavar: '<ca-bundle-file>',
    help: 'CA certificate bundle file (Env: OS_CACERT)',
  },
  {
    flag: '--os-baremetal-api-version',
    key: 'microversion',
    env: 'OS_BAREMETAL_API_VERSION',
    file: 'baremetal_default_microversion',
    help: "Ironic API microversion: 'latest' (default) or 1.N",
  },
];

/** A mistake in the configuration. The message says what is wrong, never a configured value. */
export class ConfigError extends Error {
  /** @param {{ seeHelp?: boolean }} [how] seeHelp: the command line adds where to read more, as baremetal does. */
  constructor(message, { seeHelp = false } = {}) {
    super(message);
    this.name = 'ConfigError';
    this.seeHelp = seeHelp;
  }
}

export const BY_KEY = new Map(OS_FLAGS.map((o) => [o.key, o]));

// Auth types ironic-wait implements, and the aliases keystoneauth/openstacksdk accept for them.
const AUTH_TYPES = {
  password: 'password',
  v3password: 'password',
  token: 'token',
  v3token: 'token',
  v3applicationcredential: 'v3applicationcredential',
  none: 'none',
  None: 'none',
  http_basic: 'http_basic',
  admin_token: 'admin_token',
  token_endpoint: 'admin_token',
};

const INTERFACES = {
  public: 'public',
  internal: 'internal',
  admin: 'admin',
  publicURL: 'public',
  internalURL: 'internal',
  adminURL: 'admin',
};

const NO_ENDPOINT =
  'The Bare Metal API endpoint cannot be detected and was not provided explicitly.\n' +
  '* Use --os-endpoint for standalone ironic.\n' +
  '* Use --os-auth-url and credentials for authentication.\n' +
  '* Use --os-cloud to load configuration from clouds.yaml';

/**
 * IronicClient options from OS_* variables alone (no clouds.yaml): a Worker's or a Deno server's
 * environment. An empty variable counts as not given.
 * @param {Record<string, unknown>} env
 */
export function optionsFromEnvironment(env) {
  const value = {};
  for (const option of OS_FLAGS) {
    const given = env[option.env];
    value[option.key] = typeof given === 'string' && given !== '' ? given : undefined;
  }
  return buildClientOptions(value);
}

export function buildClientOptions(value) {
  const client = {};
  if (value.endpoint !== undefined) client.endpoint = value.endpoint;
  if (value.region !== undefined) client.region = value.region;
  if (value.interface !== undefined) {
    const iface = Object.hasOwn(INTERFACES, value.interface) ? INTERFACES[value.interface] : undefined;
    if (!iface) {
      throw new ConfigError(`Invalid interface ${JSON.stringify(value.interface)}: use public, internal or admin.`);
    }
    client.interface = iface;
  }
  if (value.microversion !== undefined) client.microversion = microversionOf(value.microversion);

  const type = authTypeOf(value);
  const pick = (...keys) => {
    const out = {};
    for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
    return out;
  };
  switch (type) {
    case 'none':
      if (client.endpoint === undefined) throw new ConfigError(NO_ENDPOINT, { seeHelp: true });
      client.auth = { type: 'none' };
      break;
    case 'http_basic':
      requireParameters(value, ['username', 'password']);
      if (client.endpoint === undefined) throw new ConfigError(NO_ENDPOINT, { seeHelp: true });
      client.auth = { type: 'http_basic', ...pick('username', 'password') };
      break;
    case 'admin_token':
      // A ready token sent straight to the given endpoint, without Keystone.
      requireParameters(value, ['token', 'endpoint']);
      client.token = value.token;
      break;
    case 'password': {
      requireParameters(value, ['authUrl']);
      if (value.username === undefined && value.userId === undefined) {
        throw new ConfigError('Auth plugin requires parameters which were not given: username or user_id');
      }
      if (value.password === undefined) throw new ConfigError('password is a required attribute');
      const auth = { type, ...pick('authUrl', 'username', 'userId', 'password', 'userDomainName', 'userDomainId') };
      Object.assign(auth, scopeOf(value));
      applyDefaultDomain(auth, value);
      client.auth = auth;
      break;
    }
    case 'token':
      requireParameters(value, ['authUrl', 'token']);
      client.auth = { type, ...pick('authUrl', 'token'), ...scopeOf(value) };
      break;
    case 'v3applicationcredential': {
      requireParameters(value, ['authUrl']);
      const byName = value.applicationCredentialName !== undefined && (value.userId !== undefined || value.username !== undefined);
      if (value.applicationCredentialId === undefined && !byName) {
        throw new ConfigError('You must provide either an application credential ID or an application ' + 'credential name and user.');
      }
      requireParameters(value, ['applicationCredentialSecret']);
      const auth = { type, ...pick('authUrl', 'applicationCredentialSecret') };
      if (value.applicationCredentialId !== undefined) {
        auth.applicationCredentialId = value.applicationCredentialId;
      } else {
        Object.assign(auth, pick('applicationCredentialName', 'userId', 'username', 'userDomainName', 'userDomainId'));
        // A user named without a domain: the default domain, as for password (python leaves it out and
        // Keystone refuses the request).
        applyDefaultDomain(auth, value);
      }
      client.auth = auth;
      break;
    }
  }
  return client;
}

// The explicit auth type, or the one the given values call for: python-openstackclient picks password
// for a user and token for a token; beyond it, an application credential picks v3applicationcredential
// and an endpoint without a Keystone URL picks none (`baremetal`'s own default).
function authTypeOf(value) {
  if (value.authType !== undefined) {
    const type = Object.hasOwn(AUTH_TYPES, value.authType) ? AUTH_TYPES[value.authType] : undefined;
    if (!type) {
      const names = Object.keys(AUTH_TYPES)
        .filter((n) => n !== 'None')
        .join(',');
      throw new ConfigError(`An invalid auth-type was specified: ${value.authType}. Valid choices are: ${names}.`);
    }
    return type;
  }
  if (value.username !== undefined || value.userId !== undefined) {
    return value.applicationCredentialName !== undefined && value.password === undefined ? 'v3applicationcredential' : 'password';
  }
  if (value.token !== undefined) return value.authUrl === undefined && value.endpoint !== undefined ? 'admin_token' : 'token';
  if (value.applicationCredentialId !== undefined || value.applicationCredentialSecret !== undefined) {
    return 'v3applicationcredential';
  }
  return value.authUrl !== undefined ? 'password' : 'none';
}

// Scope of a password or token login. A domain given with a project is the user's and the project's
// domain, not a scope (openstacksdk's `_handle_domain_id`).
function scopeOf(value) {
  if (value.projectId !== undefined || value.projectName !== undefined) {
    const scope = value.projectId !== undefined ? { projectId: value.projectId } : { projectName: value.projectName };
    if (scope.projectName !== undefined) {
      if (value.projectDomainId !== undefined) scope.projectDomainId = value.projectDomainId;
      else if (value.projectDomainName !== undefined) scope.projectDomainName = value.projectDomainName;
      else if (value.domainId !== undefined) scope.projectDomainId = value.domainId;
      else if (value.domainName !== undefined) scope.projectDomainName = value.domainName;
    }
    return scope;
  }
  if (value.domainId !== undefined) return { domainId: value.domainId };
  if (value.domainName !== undefined) return { domainName: value.domainName };
  if (value.systemScope !== undefined) return { systemScope: value.systemScope };
  return {};
}

function userDomainFromDomain(value) {
  const projectScoped = value.projectId !== undefined || value.projectName !== undefined;
  if (projectScoped && value.domainId !== undefined) return { userDomainId: value.domainId };
  if (projectScoped && value.domainName !== undefined) return { userDomainName: value.domainName };
  return {};
}

// OSC's default-domain rule for password logins: a user or project named without a domain is in the
// default domain (keystoneauth's --os-default-domain-id/-name first, then OSC's --os-default-domain,
// itself 'default' when not given).
function applyDefaultDomain(auth, value) {
  // Only password logins carry a project name here, so only they get a project domain.
  if (auth.username !== undefined && auth.userDomainId === undefined && auth.userDomainName === undefined) {
    Object.assign(auth, userDomainFromDomain(value));
  }
  const fallback =
    value.defaultDomainId !== undefined
      ? { id: value.defaultDomainId }
      : value.defaultDomainName !== undefined
        ? { name: value.defaultDomainName }
        : { id: value.defaultDomain ?? 'default' };
  if (auth.username !== undefined && auth.userDomainId === undefined && auth.userDomainName === undefined) {
    if (fallback.id !== undefined) auth.userDomainId = fallback.id;
    else auth.userDomainName = fallback.name;
  }
  if (auth.projectName !== undefined && auth.projectDomainId === undefined && auth.projectDomainName === undefined) {
    if (fallback.id !== undefined) auth.projectDomainId = fallback.id;
    else auth.projectDomainName = fallback.name;
  }
}

function requireParameters(value, keys) {
  const missing = keys.filter((key) => value[key] === undefined).map((key) => BY_KEY.get(key).file ?? key);
  if (missing.length > 0) {
    throw new ConfigError(`Auth plugin requires parameters which were not given: ${missing.join(', ')}`);
  }
}

// 'latest', '1' (the major version: latest, as python-ironicclient) or '1.N'.
function microversionOf(text) {
  if (text === 'latest' || text === '1') return 'latest';
  if (/^1\.\d{1,4}$/.test(text)) return text;
  throw new ConfigError(`Invalid baremetal API version ${JSON.stringify(text)}: use 'latest' or 1.N.`);
}
