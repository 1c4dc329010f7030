"""python-ironicclient doing what a test asks, so that ironic-wait's messages
can be compared with the original's, character for character.

Run with the venv's python (scripts/real-ironic.mjs makes it). Reads one JSON
request on stdin:

    {"endpoint": "http://127.0.0.1:PORT", "version": "latest" | "1.N",
     "max_retries": N, "retry_interval": S, "steps": [STEP, ...]}

and prints one JSON line, {"results": [RESULT, ...]}, a result per step:
{"ok": true, "value": ...} or {"ok": false, "type": "<exception class>",
"message": str(exception)}. A step's failure does not stop the next one.

Steps do what the `baremetal` CLI does with the same arguments:
    {"op": "provision", "nodes": [...], "target": "active", "wait": 60,
     "poll_interval": 0.5, "configdrive": ..., "clean_steps": [...],
     "deploy_steps": [...], "service_steps": [...], "rescue_password": "..."}
        one PUT per node in order, then wait_for_provision_state with the
        action's expected state (as `baremetal node <verb> --wait`)
    {"op": "wait", "nodes": [...], "expected": "active", "timeout": 10,
     "poll_interval": 0.5}
    {"op": "get", "node": "n1"}
    {"op": "allocation", "fields": {...}, "wait": 30, "poll_interval": 1}
        create, then wait (as `baremetal allocation create --wait`)
    {"op": "version"}       the negotiated microversion after one call
"""
import json
import sys

from ironicclient import client as ironic_client
from ironicclient.v1 import utils as v1_utils


def provision(c, step):
    for node in step["nodes"]:
        c.node.set_provision_state(
            node,
            step["target"],
            configdrive=step.get("configdrive"),
            cleansteps=step.get("clean_steps"),
            deploysteps=step.get("deploy_steps"),
            servicesteps=step.get("service_steps"),
            rescue_password=step.get("rescue_password"),
        )
    if "wait" in step:
        action = v1_utils.PROVISION_ACTIONS[step["target"]]
        c.node.wait_for_provision_state(
            step["nodes"],
            expected_state=action["expected_state"],
            timeout=step["wait"],
            poll_interval=step.get("poll_interval", action["poll_interval"]),
        )


def wait(c, step):
    c.node.wait_for_provision_state(
        step["nodes"],
        expected_state=step["expected"],
        timeout=step.get("timeout", 0),
        poll_interval=step.get("poll_interval", 2),
    )


def get(c, step):
    return c.node.get(step["node"]).to_dict()


def allocation(c, step):
    created = c.allocation.create(**step["fields"])
    if "wait" in step:
        created = c.allocation.wait(
            created.uuid,
            timeout=step["wait"],
            poll_interval=step.get("poll_interval", 1),
        )
    return created.to_dict()


def version(c, step):
    c.node.list(limit=1)
    return c.http_client.os_ironic_api_version


OPS = {"provision": provision, "wait": wait, "get": get,
       "allocation": allocation, "version": version}


def main():
    request = json.load(sys.stdin)
    c = ironic_client.get_client(
        "1",
        endpoint=request["endpoint"],
        os_ironic_api_version=request.get("version", "latest"),
        max_retries=request.get("max_retries"),
        retry_interval=request.get("retry_interval"),
    )
    results = []
    for step in request["steps"]:
        try:
            results.append({"ok": True, "value": OPS[step["op"]](c, step)})
        except Exception as e:  # every failure is a result to compare
            results.append({"ok": False, "type": type(e).__name__,
                            "message": str(e)})
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()
