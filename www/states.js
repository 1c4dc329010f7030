// What the console knows about Ironic's provision states: the actions it
// offers, the states each one walks through (for the progress indicator) and
// how a state is coloured. The client decides when a wait is over; this table
// only draws it.

/**
 * Action -> its label, the states Ironic walks through to the expected one
 * (last), and the extra input it needs. `path: null`: sent without waiting
 * (Ironic gives these no expected state).
 */
export const ACTIONS = {
  manage: { label: 'manage', path: ['verifying', 'manageable'] },
  provide: { label: 'provide', path: ['cleaning', 'clean wait', 'available'] },
  deploy: { label: 'deploy', path: ['deploying', 'wait call-back', 'deploying', 'active'] },
  undeploy: { label: 'undeploy', path: ['deleting', 'cleaning', 'available'] },
  inspect: { label: 'inspect', path: ['inspecting', 'manageable'] },
  clean: { label: 'clean (with steps)', path: ['cleaning', 'manageable'], needs: 'cleanSteps' },
  rescue: { label: 'rescue (with password)', path: ['rescuing', 'rescue'], needs: 'rescuePassword' },
  unrescue: { label: 'unrescue', path: ['unrescuing', 'active'] },
  adopt: { label: 'adopt', path: ['adopting', 'active'] },
  rebuild: { label: 'rebuild', path: ['deploying', 'active'] },
  service: { label: 'service (with steps)', path: ['servicing', 'active'], needs: 'serviceSteps' },
  abort: { label: 'abort', path: null },
  unhold: { label: 'unhold', path: null },
};

/** Steps offered as a starting point when an action needs them. */
export const EXAMPLE_STEPS = {
  cleanSteps: [{ interface: 'deploy', step: 'erase_devices_metadata' }],
  serviceSteps: [{ interface: 'bios', step: 'apply_configuration', args: { settings: [] } }],
};

/**
 * Where a node is on `path` after it was seen in `state`, given where it was
 * (`pos`, -1 before the first sighting): the next matching step forwards (so
 * a second `deploying` is the later one), else an earlier one (cleaning after
 * clean wait loops back), else unchanged (a state the path does not name).
 */
export function stepOf(path, state, pos) {
  const forward = path.indexOf(state, Math.max(pos, 0));
  if (forward !== -1) return forward;
  const back = path.lastIndexOf(state, pos);
  return back === -1 ? pos : back;
}

/** A provision state's colour family: failed, hold, working, or the stable state itself. */
export function stateKind(state) {
  if (state == null) return 'none';
  if (state === 'error' || state.endsWith(' failed')) return 'failed';
  if (state.endsWith(' hold')) return 'hold';
  if (['enroll', 'manageable', 'available', 'active', 'rescue'].includes(state)) return state;
  return 'working';
}

/** Outcome of a settled node -> how the console counts it. */
export const OUTCOME_GROUP = {
  reached: 'reached',
  failed: 'failed',
  'unexpected-stable': 'failed',
  'not-found': 'failed',
  error: 'failed',
  'timed-out': 'timed-out',
  held: 'other',
  aborted: 'cancelled',
  stopped: 'other',
  accepted: 'sent',
};
