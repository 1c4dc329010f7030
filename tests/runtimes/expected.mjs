// What scenario.mjs must report in every runtime: python-ironicclient's
// messages, the outcomes and the simulator's request log as the README
// promises them. UUIDs and request ids read `<uuid>`.

const ERRORS = [
  'IronicWaitError',
  'InvalidArgumentError',
  'InvalidResponseError',
  'IronicHttpError',
  'ConnectionError',
  'AuthError',
  'UnsupportedVersionError',
  'StateTransitionFailed',
  'StateTransitionTimeout',
];

/** An error described by the scenario's `describe`. */
const error = (name, message, extra = {}) => ({
  name,
  message,
  string: `${name}: ${message}`,
  classes: ['IronicWaitError', name],
  isError: true,
  ...extra,
});

const NO_DEPLOY_STEPS = 'No deploy steps returned by the driver';
const NO_GOLD = 'Failed to process allocation <uuid>: no available nodes match the resource class no-such-class.';
// The malformed fault cuts the body in half; the message quotes its start.
// python-ironicclient's words for JSON that does not parse (Python keeps the raw bytes).
const NOT_JSON = 'API response body must be a JSON object; got bytes';

export const EXPECTED = {
  exports: {
    names: [...ERRORS.filter((n) => n !== 'IronicWaitError'), 'IronicClient', 'IronicWaitError', 'tables', 'version'].sort(),
    version: true,
    microversion: '1.115',
    deploy: {
      name: 'deploy',
      target: 'active',
      expected: 'active',
      pollInterval: 10,
      via: ['deploying', 'wait call-back', 'deploying'],
      needs: null,
    },
    frozen: true,
  },
  // Names survive minifiers: each class has its own as a string.
  errorNames: ERRORS.map((name) => [name, name, `${name}: text`, true, true]),
  provisionReached: {
    ok: true,
    nodes: [['n1', 'reached', 'active', null]],
    lastProgress: ['n1', 'active', true, 'reached'],
    walked: ['available', 'deploying', 'wait call-back', 'deploying', 'active'],
    puts: 1,
  },
  failureFirst: {
    ...error(
      'StateTransitionFailed',
      `Node n1 failed to reach state active. It's in state deploy failed, and has error: ${NO_DEPLOY_STEPS}`,
    ),
    node: 'n1',
    expected: 'active',
    state: 'deploy failed',
    lastError: NO_DEPLOY_STEPS,
    unexpectedStable: false,
    reportOutcomes: [['n1', 'failed', 'deploy failed', NO_DEPLOY_STEPS]],
  },
  failureAll: {
    ok: false,
    nodes: [
      ['good', 'reached', 'active', null],
      ['bad', 'failed', 'deploy failed', NO_DEPLOY_STEPS],
    ],
    // A failed node's entry carries the error it would have ended a first-failure wait with.
    errors: [
      null,
      error(
        'StateTransitionFailed',
        `Node bad failed to reach state active. It's in state deploy failed, and has error: ${NO_DEPLOY_STEPS}`,
      ),
    ],
  },
  timeout: {
    ...error('StateTransitionTimeout', 'Node(s) a, b failed to reach state active in 3 seconds'),
    nodes: ['a', 'b'],
    expected: 'active',
    timeout: 3,
    reportNodes: [
      ['a', 'timed-out', 'deploying', 2],
      ['b', 'timed-out', 'deploying', 2],
    ],
    getsOfA: 2,
  },
  allocation: {
    state: 'active',
    name: 'alloc-1',
    onG1: true,
    outcome: 'reached',
    failed: {
      ...error('StateTransitionFailed', `Allocation <uuid> failed: ${NO_GOLD}`),
      allocation: '<uuid>',
      state: 'error',
      lastError: NO_GOLD,
    },
  },
  abortMidWait: {
    rejection: 'AbortError',
    isSignalReason: true,
    requestsAfterAbort: 0,
    lastProgress: ['n1', true, 'aborted'],
    ownReasonPassedThrough: true,
    alreadyAborted: 'AbortError',
    sentWhenAlreadyAborted: 0,
  },
  abortPuts: {
    rejection: 'AbortError',
    isSignalReason: true,
    puts: 4, // the first window of `concurrency: 4`, and nothing after the abort
    nodeGets: 0,
    abortedEvents: 10, // "each unsettled node gets a last progress event with outcome aborted"
  },
  malformed: {
    getNode: error('InvalidResponseError', NOT_JSON),
    wait: {
      ok: false,
      nodes: [['n1', 'error', null, null]],
      error: error('InvalidResponseError', NOT_JSON),
    },
    gets: 2, // not retried
  },
  listMode: {
    ok: true,
    reached: 60,
    inOrder: true,
    puts: 60,
    firstCheck: '/v1/nodes',
    listQueries: ['fields=uuid,name,provision_state,target_provision_state,last_error&limit=1000'],
  },
  watch: {
    added: ['w1', 'w2', 'w3', 'w4', 'w5'],
    last: ['modified', 'w2', 'active'],
    quietAfterBreak: true,
  },
  getNode: {
    keys: ['links', 'name', 'provision_state', 'resource_class', 'uuid'],
    node: ['n1', 'active', 'gold', '<uuid>'],
    query: 'fields=uuid,name,provision_state,resource_class',
    missing: {
      ...error('IronicHttpError', 'Node ghost could not be found. (HTTP 404) (Request-ID: req-<uuid>)'),
      status: 404,
      detail: 'Node ghost could not be found.',
    },
    requestId: true,
  },
  listNodes: {
    all: ['a1', 'm1', 'a2', 'v1', 'e1'],
    detailed: true,
    active: ['a1', 'a2'],
    limited: ['a1', 'm1'],
    fields: [
      ['a1', 'm1', 'a2', 'v1', 'e1'],
      ['links', 'name', 'provision_state'],
    ],
  },
};
