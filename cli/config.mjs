// OpenStack configuration for the CLI and the console server: clouds.yaml (with secure.yaml and
// clouds-public.yaml), the OS_* variables and the --os-* flags, resolved the way python-openstackclient
// (osc-lib on openstacksdk's loader) resolves them, into IronicClient constructor options.
//
// Precedence: --os-* flag > OS_* variable > the cloud's entry in clouds.yaml (secure.yaml merged in,
// its `profile:` from clouds-public.yaml under it, the chosen region's `values` over it).
// Error messages never contain a configured value, so never a secret.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { BY_KEY, buildClientOptions, ConfigError, OS_FLAGS } from './settings.mjs';

export { ConfigError, OS_FLAGS };

// OS_* variables that only select or locate a configuration; alone they do not make the
// environment a cloud of its own (openstacksdk's loader, `_get_os_environ`).
const SELECTOR_VARIABLES = new Set(['OS_CLOUD', 'OS_REGION_NAME', 'OS_CLIENT_CONFIG_FILE', 'OS_CLIENT_SECURE_FILE', 'OS_CLOUD_NAME']);

/**
 * Resolve the OpenStack configuration into IronicClient options.
 * @param {object} [options]
 * @param {Record<string, string>} [options.flags] parsed --os-* values keyed by OS_FLAGS[].key
 * @param {boolean} [options.verify] --verify (true) or --insecure (false); the file's otherwise
 * @param {Record<string, string|undefined>} [options.env] the environment (OS_*, XDG_CONFIG_HOME)
 * @param {string} [options.cwd] first directory searched for clouds.yaml
 * @param {string} [options.home] home directory (~/.config/openstack)
 * @param {string[]} [options.systemDirs] the system directories searched last
 * @returns {Promise<{ client: object, cloud: string|null, tls?: { cacert?: string, verify: boolean } }>}
 */
export async function resolveConfig({ flags = {}, verify, env = process.env, cwd = process.cwd(), home = os.homedir(), systemDirs } = {}) {
  for (const key of Object.keys(flags)) {
    if (!BY_KEY.has(key)) throw new ConfigError(`Unknown configuration option: ${key}`);
  }
  // An empty flag or variable counts as not given, as in python (argparse values of '' are dropped).
  const given = (value) => (typeof value === 'string' && value !== '' ? value : undefined);
  const fromArgs = (key) => given(flags[key]) ?? given(env[BY_KEY.get(key).env]);

  const dirs = searchDirs({ env, cwd, home, systemDirs });
  const files = await loadCloudFiles(dirs, env);
  const clouds = files.clouds;

  // Which cloud: --os-cloud / OS_CLOUD; else the environment when it has settings of its own; else the
  // only cloud of clouds.yaml, if it has exactly one (openstacksdk's rule).
  let cloud = fromArgs('cloud') ?? null;
  if (cloud === null && !hasEnvironmentSettings(env)) {
    const names = Object.keys(clouds);
    if (names.length === 1) cloud = names[0];
  }
  let fileLayer = { auth: {} };
  let regionName = fromArgs('region');
  if (cloud !== null) {
    if (!Object.hasOwn(clouds, cloud)) throw new ConfigError(`Cloud ${cloud} was not found.`);
    const entry = clouds[cloud];
    if (!isMapping(entry)) throw new ConfigError(`Cloud ${cloud} in ${files.configPath} is not a mapping.`);
    const profile = await profileOf(cloud, entry, dirs);
    fileLayer = authUpdate(authUpdate(fileLayer, profile), entry);
    const region = pickRegion(cloud, entry, profile, regionName);
    if (region) {
      fileLayer = authUpdate(fileLayer, region.values);
      regionName = region.name || undefined;
    }
  }
  fileLayer = fixLegacyKeys(fileLayer);

  // One value per option: flag, else variable, else the file (top level before `auth:`, as OSC).
  const value = {};
  for (const option of OS_FLAGS) {
    value[option.key] = fromArgs(option.key) ?? fileValue(fileLayer, option);
  }
  value.region = regionName;
  value.endpoint = fromArgs('endpoint') ?? fileEndpoint(fileLayer);
  value.microversion = fromArgs('microversion') ?? fileMicroversion(fileLayer);

  // Certificates, as OSC: --insecure (verify false) or --verify beats the file's `verify` (or its old
  // `insecure`); a CA bundle counts only while certificates are checked. Absent: the platform's checks.
  const tls = { cacert: value.cacert, verify: verify ?? fileVerify(fileLayer) ?? true };
  return { client: buildClientOptions(value), cloud, ...((tls.cacert !== undefined || !tls.verify) && { tls }) };
}

/** clouds.yaml's `verify`, or its older `insecure` (its opposite); undefined when neither is set. */
function fileVerify(layer) {
  const truth = (v) => (typeof v === 'boolean' ? v : typeof v === 'string' ? !/^(false|no|off|0)$/i.test(v) : undefined);
  if (layer.verify !== undefined) return truth(layer.verify);
  const insecure = truth(layer.insecure);
  return insecure === undefined ? undefined : !insecure;
}

function fileValue(layer, option) {
  if (option.file === null || option.key === 'endpoint' || option.key === 'microversion') return undefined;
  const top = scalar(layer[option.file]);
  if (top !== undefined || !option.inAuth) return top;
  return scalar(layer.auth[option.file]);
}

function fileEndpoint(layer) {
  for (const value of [
    layer.baremetal_endpoint_override,
    layer.endpoint_override,
    layer.baremetal_endpoint,
    layer.endpoint,
    layer.auth.endpoint,
  ]) {
    if (scalar(value) !== undefined) return scalar(value);
  }
  return undefined;
}

function fileMicroversion(layer) {
  for (const key of ['baremetal_default_microversion', 'baremetal_api_version']) {
    const raw = layer[key];
    // Unquoted, 1.80 is the number 1.8 (python reads it so too and would pin 1.8).
    if (typeof raw === 'number' && !Number.isInteger(raw)) {
      throw new ConfigError(`${key} in clouds.yaml must be quoted, as in '1.80': a number loses its trailing zeros.`);
    }
    // baremetal_api_version is openstacksdk's major API version ('1', i.e. latest); a 1.N there pins.
    if (scalar(raw) !== undefined) return scalar(raw);
  }
  return undefined;
}

// YAML gives numbers and booleans; python's loader turns numbers into strings (normalize_keys).
function scalar(value) {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return undefined;
}

// Old spellings openstacksdk still accepts, in `auth:` or at the top level.
function fixLegacyKeys(layer) {
  const out = { ...layer, auth: { ...layer.auth } };
  const renames = { tenant_name: 'project_name', tenant_id: 'project_id', auth_token: 'token' };
  for (const [old, current] of Object.entries(renames)) {
    for (const where of [out, out.auth]) {
      if (where[old] !== undefined && where[current] === undefined) where[current] = where[old];
      delete where[old];
    }
  }
  if (out.auth_type === undefined && out.auth_plugin !== undefined) out.auth_type = out.auth_plugin;
  if (out.interface === undefined) out.interface = out.baremetal_endpoint_type ?? out.endpoint_type;
  if (out.baremetal_interface !== undefined) out.interface = out.baremetal_interface;
  return out;
}

function hasEnvironmentSettings(env) {
  return Object.keys(env).some((name) => name.startsWith('OS_') && !SELECTOR_VARIABLES.has(name) && !/^OS_(TEST|STD|LOG)/.test(name));
}

// The region of the cloud in use: the requested one, which must be listed when the cloud lists regions,
// else the first listed (openstacksdk's `_get_region`). null when the cloud lists none.
function pickRegion(cloud, entry, profile, requested) {
  let list = entry.regions ?? entry.region_name ?? profile.regions ?? profile.region_name;
  if (list === undefined || list === null) return null;
  if (typeof list === 'string') list = list.split(',');
  if (!Array.isArray(list)) throw new ConfigError(`The regions of cloud ${cloud} are not a list.`);
  const regions = list.map((region) => {
    if (typeof region === 'string') return { name: region, values: {} };
    if (
      isMapping(region) &&
      typeof region.name === 'string' &&
      Object.keys(region).every((k) => k === 'name' || k === 'values') &&
      (region.values === undefined || isMapping(region.values))
    ) {
      return { name: region.name, values: normalizeKeys(region.values ?? {}) };
    }
    throw new ConfigError(`Invalid region entry in cloud ${cloud}.`);
  });
  if (regions.length === 0) return null;
  if (!requested) return regions[0];
  const found = regions.find((region) => region.name === requested);
  if (found) return found;
  throw new ConfigError(
    `Region ${requested} is not a valid region name for cloud ${cloud}. Valid choices ` +
      `are ${regions.map((r) => r.name).join(',')}. Please note that region names are case sensitive.`,
  );
}

async function profileOf(cloud, entry, dirs) {
  const name = entry.profile ?? entry.cloud;
  if (name === undefined || name === null) return { auth: {} };
  const vendor = await loadFirst(candidates(dirs, 'clouds-public'));
  const known = vendor && isMapping(vendor.data['public-clouds']) ? vendor.data['public-clouds'] : {};
  if (!Object.hasOwn(known, name) || !isMapping(known[name])) {
    // openstacksdk also ships built-in vendor profiles; ironic-wait only reads clouds-public.yaml.
    throw new ConfigError(
      `Couldn't find the vendor profile ${name} for the cloud ${cloud} ` +
        "(ironic-wait reads profiles from clouds-public.yaml only, not openstacksdk's built-in ones).",
    );
  }
  return normalizeKeys(known[name]);
}

function searchDirs({ env, cwd, home, systemDirs }) {
  const userConfig = env.XDG_CONFIG_HOME ? env.XDG_CONFIG_HOME : path.join(home, '.config');
  const system = systemDirs ?? [
    ...(env.XDG_CONFIG_DIRS ? env.XDG_CONFIG_DIRS.split(':') : ['/etc/xdg']).map((d) => path.join(d, 'openstack')),
    '/etc/openstack',
  ];
  const all = [cwd, path.join(userConfig, 'openstack'), path.join(home, '.config', 'openstack'), ...system];
  return all.filter((dir, i) => all.indexOf(dir) === i);
}

function candidates(dirs, base) {
  return dirs.flatMap((dir) => ['.yaml', '.yml', '.json'].map((ext) => path.join(dir, base + ext)));
}

// clouds.yaml and secure.yaml: the first found of each (OS_CLIENT_CONFIG_FILE / OS_CLIENT_SECURE_FILE
// first), secure.yaml deep-merged over clouds.yaml.
async function loadCloudFiles(dirs, env) {
  const configFiles = candidates(dirs, 'clouds');
  if (env.OS_CLIENT_CONFIG_FILE) configFiles.unshift(env.OS_CLIENT_CONFIG_FILE);
  const secureFiles = candidates(dirs, 'secure');
  if (env.OS_CLIENT_SECURE_FILE) secureFiles.unshift(env.OS_CLIENT_SECURE_FILE);
  const config = await loadFirst(configFiles);
  const secure = await loadFirst(secureFiles);
  let merged = config ? config.data : {};
  if (secure) merged = mergeDeep(merged, secure.data);
  const clouds = merged.clouds ?? {};
  if (!isMapping(clouds)) throw new ConfigError(`"clouds" in ${config?.path ?? secure.path} is not a mapping.`);
  const normalized = {};
  for (const [name, entry] of Object.entries(clouds)) normalized[name] = isMapping(entry) ? normalizeKeys(entry) : entry;
  return { clouds: normalized, configPath: config?.path ?? secure?.path };
}

// The first file of the list that exists and can be read. A file that cannot be parsed is an error here
// (python skips it with a warning, which then reads as "Cloud ... was not found").
async function loadFirst(files) {
  for (const file of files) {
    let text;
    try {
      text = await fs.readFile(file, 'utf8');
    } catch (err) {
      if (['ENOENT', 'ENOTDIR', 'EACCES', 'EISDIR', 'EPERM'].includes(err.code)) continue;
      throw new ConfigError(`Cannot read ${file}: ${err.code ?? 'error'}`);
    }
    let data;
    try {
      // YAML 1.1, as PyYAML reads clouds.yaml. The parser's message quotes the file, so only the
      // position is reported: the file holds passwords.
      data = file.endsWith('json') ? JSON.parse(text) : YAML.parse(text, { version: '1.1' });
    } catch (err) {
      const where = err.linePos?.[0] ? ` at line ${err.linePos[0].line}, column ${err.linePos[0].col}` : '';
      throw new ConfigError(`Cannot parse ${file}${where}.`);
    }
    if (data === null || data === undefined) data = {};
    if (!isMapping(data)) throw new ConfigError(`${file} is not a mapping.`);
    return { path: file, data };
  }
  return null;
}

function isMapping(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function normalizeKeys(object) {
  const out = {};
  for (const [key, value] of Object.entries(object)) {
    out[key.replaceAll('-', '_')] = isMapping(value) ? normalizeKeys(value) : value;
  }
  return out;
}

function mergeDeep(base, over) {
  const out = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isMapping(value) && isMapping(out[key]) ? mergeDeep(out[key], value) : value;
  }
  return out;
}

// dict.update, except that the nested `auth` mapping is updated rather than replaced.
function authUpdate(base, over) {
  const out = { ...base, auth: { ...base.auth } };
  for (const [key, value] of Object.entries(over)) {
    if (key === 'auth') {
      if (isMapping(value)) Object.assign(out.auth, value);
    } else {
      out[key] = value;
    }
  }
  return out;
}
