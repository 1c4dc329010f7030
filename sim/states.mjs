// Ironic's provision state machine, as data (ironic/common/states.py and
// state_machine.py on master): which events each state accepts, which
// states are stable, and what the API's PUT targets mean.

export const STABLE = new Set(['enroll', 'manageable', 'available', 'active', 'error', 'rescue']);

/** state -> { event -> next state } */
export const MACHINE = {
  enroll: { manage: 'verifying' },
  verifying: { done: 'manageable', fail: 'enroll' },
  manageable: { provide: 'cleaning', clean: 'cleaning', inspect: 'inspecting', adopt: 'adopting' },
  available: { deploy: 'deploying', manage: 'manageable' },
  deploying: { fail: 'deploy failed', wait: 'wait call-back', hold: 'deploy hold', done: 'active' },
  'wait call-back': { hold: 'deploy hold', resume: 'deploying', fail: 'deploy failed', abort: 'deploy failed', delete: 'deleting' },
  'deploy hold': { unhold: 'wait call-back', abort: 'deploy failed' },
  'deploy failed': { rebuild: 'deploying', deploy: 'deploying', delete: 'deleting' },
  active: { rebuild: 'deploying', delete: 'deleting', rescue: 'rescuing', service: 'servicing' },
  deleting: { fail: 'error', clean: 'cleaning' },
  error: { rebuild: 'deploying', delete: 'deleting' },
  cleaning: { done: 'available', fail: 'clean failed', wait: 'clean wait', hold: 'clean hold', manage: 'manageable' },
  'clean wait': { fail: 'clean failed', abort: 'clean failed', hold: 'clean hold', resume: 'cleaning' },
  'clean hold': { abort: 'clean failed', unhold: 'clean wait' },
  'clean failed': { manage: 'manageable' },
  inspecting: { done: 'manageable', fail: 'inspect failed', wait: 'inspect wait' },
  'inspect wait': { done: 'manageable', fail: 'inspect failed', abort: 'inspect failed', resume: 'inspecting' },
  'inspect failed': { manage: 'manageable', inspect: 'inspecting' },
  adopting: { done: 'active', fail: 'adopt failed' },
  'adopt failed': { adopt: 'adopting', manage: 'manageable' },
  rescuing: { done: 'rescue', wait: 'rescue wait', fail: 'rescue failed' },
  'rescue wait': { resume: 'rescuing', fail: 'rescue failed', abort: 'rescue failed', delete: 'deleting' },
  rescue: { rescue: 'rescuing', delete: 'deleting', unrescue: 'unrescuing' },
  'rescue failed': { rescue: 'rescuing', unrescue: 'unrescuing', delete: 'deleting' },
  unrescuing: { done: 'active', fail: 'unrescue failed' },
  'unrescue failed': { rescue: 'rescuing', unrescue: 'unrescuing', delete: 'deleting' },
  servicing: { done: 'active', fail: 'service failed', wait: 'service wait', hold: 'service hold' },
  'service wait': { resume: 'servicing', fail: 'service failed', abort: 'service failed', hold: 'service hold', delete: 'deleting' },
  'service hold': { service: 'servicing', unhold: 'service wait', fail: 'service failed', abort: 'service failed' },
  'service failed': {
    service: 'servicing',
    rescue: 'rescuing',
    wait: 'service wait',
    hold: 'service hold',
    delete: 'deleting',
    abort: 'active',
  },
};

/** Every provision state Ironic knows (the `provision_state` list filter accepts only these). */
export const ALL_STATES = new Set(Object.keys(MACHINE));

/** PUT target -> internal event (states.VERBS). */
export const VERBS = {
  active: 'deploy',
  deploy: 'deploy',
  deleted: 'delete',
  undeploy: 'delete',
  manage: 'manage',
  provide: 'provide',
  inspect: 'inspect',
  abort: 'abort',
  clean: 'clean',
  adopt: 'adopt',
  rescue: 'rescue',
  unrescue: 'unrescue',
  unhold: 'unhold',
  service: 'service',
  rebuild: 'rebuild',
};

/**
 * Minimum microversion of a PUT target, checked before the state machine
 * (api/controllers/v1/utils.py MIN_VERB_VERSIONS: it is keyed by verb names,
 * so "deploy" needs 1.73 but "undeploy" and "deleted" are never gated).
 */
export const TARGET_MIN_VERSION = {
  manage: 4,
  provide: 4,
  inspect: 6,
  abort: 13,
  clean: 15,
  adopt: 17,
  rescue: 38,
  unrescue: 38,
  deploy: 73,
};

/** Checked after the state machine, as the API does. */
export const LATE_TARGET_MIN_VERSION = { unhold: 85, service: 87 };

/** Where a transition that fails in a working state lands. */
export const FAIL_STATE = {
  verifying: 'enroll',
  deploying: 'deploy failed',
  'wait call-back': 'deploy failed',
  'deploy hold': 'deploy failed',
  deleting: 'error',
  cleaning: 'clean failed',
  'clean wait': 'clean failed',
  'clean hold': 'clean failed',
  inspecting: 'inspect failed',
  'inspect wait': 'inspect failed',
  adopting: 'adopt failed',
  rescuing: 'rescue failed',
  'rescue wait': 'rescue failed',
  unrescuing: 'unrescue failed',
  servicing: 'service failed',
  'service wait': 'service failed',
  'service hold': 'service failed',
};

/** Ironic's texts when an operation is aborted on request. */
export const ABORT_ERROR = {
  'deploy failed': 'By request, the deploy operation was aborted',
  'clean failed': 'By request, the clean operation was aborted',
  'inspect failed': 'Inspection was aborted by request.',
  'rescue failed': 'By request, the rescue operation was aborted.',
  'service failed': 'By request, the service operation was aborted',
};

/** Node faults Ironic sets with maintenance after some failures. */
export const FAULT_OF = { 'clean failed': 'clean failure', 'service failed': 'service failure' };

/** The target an unstable state carries (state_machine.py `add_state(..., target=)`). */
export const TARGET_OF = {
  verifying: 'manageable',
  deploying: 'active',
  'wait call-back': 'active',
  'deploy failed': 'active',
  'deploy hold': 'active',
  cleaning: 'available',
  'clean wait': 'available',
  'clean failed': 'available',
  'clean hold': 'available',
  deleting: 'available',
  inspecting: 'manageable',
  'inspect wait': 'manageable',
  'inspect failed': 'manageable',
  adopting: 'active',
  'adopt failed': 'active',
  rescuing: 'rescue',
  'rescue wait': 'rescue',
  'rescue failed': 'rescue',
  unrescuing: 'active',
  'unrescue failed': 'active',
  servicing: 'active',
  'service wait': 'active',
  'service failed': 'active',
  'service hold': 'active',
};

export function nextState(state, event) {
  const edges = MACHINE[state];
  return edges ? edges[event] : undefined;
}
