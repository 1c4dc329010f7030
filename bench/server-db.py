"""The database side of bench/server.mjs: makes a fleet in Ironic's own
`nodes` table and moves nodes, without Ironic's API (10,000 POSTs take
minutes; a SQL INSERT of the same rows takes a second).

Run with the real-ironic venv's Python, one process for a whole fleet: it
reads one JSON command a line on stdin and answers one JSON line on stdout.

  {"op": "fleet", "nodes": N, "seed": S}
      Every row in `nodes` now (nodes made through the API, so that each
      column holds what Ironic itself writes) is a template: the first is
      copied N times with its own id, uuid, name, states and stamps, and the
      templates are deleted.
  {"op": "bump", "count": M, "seed": S}
      M nodes in `available` or `manageable` flip to the other state with a
      new provision_updated_at (what a `manage` or `provide` would leave,
      without the conductor's work): the changes a busy round reads.

--sqlite FILE, or --mysql-socket SOCKET --mysql-db NAME (PyMySQL, found on
PYTHONPATH), names the database.
"""

import argparse
import datetime
import json
import random
import sys
import uuid

# The fleet's provision states, mostly `active` and `available` as in a
# cloud in use. Only states no conductor periodic task moves on its own (no
# `wait call-back` or `clean wait`: their time-outs would change nodes
# during the measurements).
STATES = [
    ("active", 0.60),
    ("available", 0.30),
    ("manageable", 0.05),
    ("enroll", 0.02),
    ("deploy failed", 0.01),
    ("clean failed", 0.01),
    ("error", 0.01),
]

# Stamps spread over the 30 days before the fleet was made.
SPREAD = datetime.timedelta(days=30)


def connect(args):
    if args.sqlite:
        import sqlite3

        db = sqlite3.connect(args.sqlite, timeout=30)
        return db, "?", lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")
    import pymysql

    db = pymysql.connect(unix_socket=args.mysql_socket, user="root", database=args.mysql_db, autocommit=False)
    # DATETIME columns without a fraction: MariaDB keeps whole seconds, as
    # Ironic's MySQL schema does.
    return db, "%s", lambda t: t.strftime("%Y-%m-%d %H:%M:%S")


def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def pick_state(rng):
    x = rng.random()
    for state, share in STATES:
        if x < share:
            return state
        x -= share
    return STATES[0][0]


def fleet(db, mark, stamp, nodes, seed):
    rng = random.Random(seed)
    cur = db.cursor()
    cur.execute("SELECT * FROM nodes ORDER BY id")
    columns = [d[0] for d in cur.description]
    templates = cur.fetchall()
    if not templates:
        raise SystemExit("no template node in the database")
    template = dict(zip(columns, templates[0]))
    ids = [row[columns.index("id")] for row in templates]
    # A node made through the API has no other rows yet, but its history
    # may: drop both.
    for table in ("node_history", "nodes"):
        column = "node_id" if table != "nodes" else "id"
        cur.execute(f"DELETE FROM {table} WHERE {column} IN ({', '.join(mark for _ in ids)})", ids)
    made = now()
    rows = []
    for i in range(nodes):
        state = pick_state(rng)
        at = made - SPREAD * rng.random()
        row = dict(template)
        row.update(
            id=i + 1,
            uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            name=f"bench-{i:06d}",
            provision_state=state,
            target_provision_state=None,
            provision_updated_at=stamp(at),
            power_state=None if state == "enroll" else "power on" if state == "active" else "power off",
            target_power_state=None,
            last_error=f"bench: {state}" if state in ("deploy failed", "clean failed", "error") else None,
            reservation=None,
            created_at=stamp(made - SPREAD),
            updated_at=stamp(at),
        )
        rows.append([row[c] for c in columns])
    cur.executemany(f"INSERT INTO nodes ({', '.join(columns)}) VALUES ({', '.join(mark for _ in columns)})", rows)
    db.commit()
    return {"nodes": nodes}


def bump(db, mark, stamp, count, seed):
    rng = random.Random(seed)
    cur = db.cursor()
    cur.execute("SELECT id, provision_state FROM nodes WHERE provision_state IN ('available', 'manageable') ORDER BY id")
    movable = cur.fetchall()
    chosen = rng.sample(movable, min(count, len(movable)))
    at = now()
    # One stamp a node, spread over the last 100 ms, as changes committed
    # one by one would have (in whole seconds on MariaDB, they share one or
    # two). The bench leaves more than a second between two moves, so that
    # none is stamped in the second of the last round's newest.
    rows = [
        (
            "manageable" if state == "available" else "available",
            stamp(at - datetime.timedelta(microseconds=k * 100_000 // max(len(chosen), 1))),
            stamp(at),
            node_id,
        )
        for k, (node_id, state) in enumerate(chosen)
    ]
    cur.executemany(
        f"UPDATE nodes SET provision_state = {mark}, provision_updated_at = {mark}, updated_at = {mark} WHERE id = {mark}",
        rows,
    )
    db.commit()
    return {"count": len(rows)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sqlite")
    parser.add_argument("--mysql-socket")
    parser.add_argument("--mysql-db")
    args = parser.parse_args()
    db, mark, stamp = connect(args)
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        try:
            if op == "fleet":
                answer = fleet(db, mark, stamp, **command)
            elif op == "bump":
                answer = bump(db, mark, stamp, **command)
            else:
                raise ValueError(f"unknown op {op}")
        except Exception as e:  # the bench reports it and stops
            db.rollback()
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
