// How the console shows Ironic's provision states: the actions it offers,
// the states each one walks through (for the progress indicator) and how a
// state is coloured, all from the package's tables. The client decides when
// a wait is over; this only draws it.

/**
 * The actions the form offers (the package's table without Ironic's own
 * `active` and `deleted`, offered as deploy and undeploy): name -> its
 * label, the states Ironic walks through to the expected one (last; `null`
 * for an action sent without waiting), and the input it needs.
 */
export function offeredActions({ actions }) {
  const aliases = new Set(actions.filter((a) => a.name !== a.target).map((a) => a.target));
  const needs = { cleanSteps: ' (with steps)', serviceSteps: ' (with steps)', rescuePassword: ' (with password)' };
  return Object.fromEntries(
    actions
      .filter((a) => !aliases.has(a.name))
      .map((a) => [a.name, { label: a.name + (needs[a.needs] ?? ''), path: a.expected ? [...a.via, a.expected] : null, needs: a.needs }]),
  );
}

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

// The package's state rules (its `tables()`), given once the package has
// loaded: app.js loads it at start, and reports it if it cannot.
let rules = null;

/** Takes the state rules from the package's tables; call before the first stateKind. */
export function useStateRules({ stableStates, holdStates, failureStates, failureSuffix }) {
  rules = { stableStates, holdStates, failureStates, failureSuffix };
}

/** A provision state's colour family: failed, hold, working, or the stable state itself. */
export function stateKind(state) {
  if (state == null) return 'none';
  if (rules.failureStates.includes(state) || state.endsWith(rules.failureSuffix)) return 'failed';
  if (rules.holdStates.includes(state)) return 'hold';
  if (rules.stableStates.includes(state)) return state;
  return 'working';
}

/** A settled node's outcome -> [what the row says, the summary counter it adds to]. */
export const OUTCOMES = {
  reached: ['reached', 'reached'],
  failed: ['failed', 'failed'],
  'unexpected-stable': ['failed', 'failed'], // e.g. manage: verifying fell back to enroll
  'not-found': ['not found', 'failed'],
  error: ['error', 'failed'],
  'timed-out': ['timed out', 'timed-out'],
  aborted: ['cancelled', 'cancelled'],
  held: ['held', 'other'],
  stopped: ['stopped', 'other'],
  accepted: ['sent', 'sent'],
  // The page's own: the call failed before any node was sent the action.
  'not-watched': ['not watched', 'other'],
};
