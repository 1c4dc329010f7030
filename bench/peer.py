"""One Python peer's wait, in a process of its own (started by bench/run.mjs):

    python bench/peer.py python-ironicclient|openstacksdk CONFIG.json
    python bench/peer.py cold python-ironicclient|openstacksdk

The same protocol as bench/client.mjs: prints `ready`, waits for `go` on
stdin, waits for every node with the library's own wait, and prints one JSON
line. CPU is the process's resource usage (user + system) around the call.
Neither library has a progress callback, so the instant a node is first seen
settled is taken where the wait reads it: each library's wait fetches nodes
through one method (NodeManager.get, BaremetalProxy.get_node), wrapped here.
`cold` only imports the library and makes a client (for the cold-start table).
With `"trace": true` in the config (the fleet table), every HTTP request the
wait sends is recorded as bench/client.mjs records it: the wall-clock instant
and the CPU so far, as requests' Session.send is called.
"""

import json
import resource
import sys
import time


def client_factory(kind):
    """Imports the peer; returns the function that makes its client for an endpoint."""
    if kind == 'python-ironicclient':
        from ironicclient import client

        return lambda url: client.get_client('1', endpoint=url)
    if kind == 'openstacksdk':
        import openstack

        return lambda url: openstack.connection.Connection(
            auth_type='none', auth={'endpoint': url}, baremetal_endpoint_override=url)
    raise SystemExit(f'unknown peer {kind}')


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    if sys.argv[1] == 'cold':
        t0 = time.perf_counter()
        factory = client_factory(sys.argv[2])
        t1 = time.perf_counter()
        factory('http://127.0.0.1:9')
        t2 = time.perf_counter()
        print(json.dumps({'importMs': (t1 - t0) * 1000, 'constructMs': (t2 - t1) * 1000, 'cpuMs': cpu_seconds() * 1000}))
        return
    kind, config_path = sys.argv[1:3]
    with open(config_path) as f:
        config = json.load(f)
    url, uuids, expected = config['url'], config['uuids'], config['expected']
    interval = config['pollInterval']
    client = client_factory(kind)(url)
    settled_at = {}

    def watching(get):
        def wrapped(ident, *args, **kwargs):
            node = get(ident, *args, **kwargs)
            state = node.provision_state
            # openstacksdk passes the Node it fetched last round from the second round on.
            ident = getattr(ident, 'id', ident)
            if ident not in settled_at and (state == expected or state == 'error' or state.endswith(' failed')):
                settled_at[ident] = time.time() * 1000
            return node
        return wrapped

    if kind == 'python-ironicclient':
        client.node.get = watching(client.node.get)

        def wait():
            client.node.wait_for_provision_state(uuids, expected, poll_interval=interval)
    else:
        proxy = client.baremetal
        proxy.get_node = watching(proxy.get_node)

        def wait():
            # Its interval is fixed at 2 s (openstack.utils.iterate_timeout).
            proxy.wait_for_nodes_provision_state(uuids, expected)

    trace = None
    if config.get('trace'):
        import requests

        send = requests.Session.send

        def traced(self, request, **kwargs):
            if trace is not None:
                trace.extend((time.time() * 1000, (cpu_seconds() - cpu0) * 1e6))
            return send(self, request, **kwargs)

        requests.Session.send = traced

    print('ready', flush=True)
    for line in sys.stdin:
        if line.strip() == 'go':
            break

    cpu0 = cpu_seconds()
    started = time.time() * 1000
    if config.get('trace'):
        trace = []
    wait()
    settled = time.time() * 1000
    cpu = cpu_seconds() - cpu0
    print(json.dumps({
        'started': started,
        'settled': settled,
        'cpuSeconds': cpu,
        # ru_maxrss is in KiB on Linux.
        'peakRssBytes': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        # Both waits raise on a failure or a timeout: returning means every node arrived.
        'outcomes': {'reached': len(uuids)},
        'settledAt': [settled_at.get(u) for u in uuids],
        **({'trace': trace} if trace is not None else {}),
    }), flush=True)


main()
