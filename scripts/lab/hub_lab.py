"""Drives the two-LAN hub test (scripts/hub-lab-test.sh) from the lab's gateway, which reaches
every node and, on its loopback, every cluster member:

  hub_lab.py DB LAN1 LAN2 MEMBERS PIDFILE SECONDS

LAN1 and LAN2 are comma-separated HOST:PORT:USER:PASSWORD of each LAN's nodes (their own
credentials), MEMBERS the same of the cluster's members in the order the nodes use them, and
PIDFILE the first member's. In order: the mesh forms (each node in sync with its LAN peer and
the hub); 20 writes are timed to the other LAN; then every node writes for SECONDS while
conflicting edits are made on both LANs, and a third of the way in the first member is killed
(kill -9). Afterwards every node and the cluster must hold the same (id, winning rev) set with
every acknowledged write, and the nodes must have gone on with the checkpoints they had.
Prints one JSON line per figure; exits non-zero with the reason on failure.
"""
import json
import os
import signal
import statistics
import sys
import threading
import time
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mesh_measure import Node, wait  # noqa: E402


def report(**figures):
    print(json.dumps(figures), flush=True)


def fail(reason):
    sys.exit(f"hub_lab: FAIL: {reason}")


def hub_entry(node):
    return next((p for p in node.peers() or [] if p["uuid"] == "hub"), None)


def formed(nodes):
    def ready():
        for node in nodes:
            states = [p["collections"].get(node.db, {}).get("state") for p in node.peers() or [] if p["trusted"]]
            if len(states) != 2 or any(s != "in_sync" for s in states):
                return False
        return True
    wait(ready, 120, "every node in sync with its LAN peer and the hub")


def percentiles(times):
    times = sorted(times)
    return {"p50": round(statistics.median(times), 3), "p95": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 3),
            "max": round(times[-1], 3)}


def arrival(writer, watcher, doc_id, limit=30):
    """Seconds from a write on `writer` until `watcher` commits it (a long poll of its feed)."""
    since = watcher.request("GET", f"/{watcher.db}")[1]["update_seq"]
    start = time.monotonic()
    status, _ = writer.request("PUT", f"/{writer.db}/{doc_id}", {"at": time.time()})
    if status != 201:
        fail(f"PUT {doc_id} answered {status}")
    while time.monotonic() < start + limit:
        status, answer = watcher.request("GET", f"/{watcher.db}/_changes?feed=longpoll&since={quote(str(since))}&timeout=5000", timeout=35)
        if status == 200 and any(row["id"] == doc_id for row in answer["results"]):
            return time.monotonic() - start
        since = answer["last_seq"] if status == 200 else since
    fail(f"{doc_id} did not reach the other LAN within {limit} s")


def writes(node, tag, seconds, acknowledged):
    deadline = time.monotonic() + seconds
    k = 0
    while time.monotonic() < deadline:
        doc_id = f"w-{tag}-{k}"
        try:
            status, answer = node.request("PUT", f"/{node.db}/{doc_id}", {"writer": tag, "k": k}, timeout=5)
            if status == 201:
                acknowledged[doc_id] = answer["rev"]
        except OSError:
            pass   # not acknowledged: nothing is owed
        k += 1
        time.sleep(0.025)


def failover(node, killed_port, start, times):
    deadline = start + 60
    while time.monotonic() < deadline:
        entry = hub_entry(node)
        if entry and entry["port"] != killed_port and entry["collections"].get(node.db, {}).get("activity") in ("idle", "busy"):
            times[node.host] = round(time.monotonic() - start, 2)
            return
        time.sleep(0.1)


def checkpoints(member):
    status, answer = member.request("GET", f"/{member.db}/_local_docs")
    if status != 200:
        fail(f"the cluster's _local_docs answered {status}")
    return sorted(row["id"] for row in answer["rows"])


def main():
    db, lan1, lan2, members, pidfile, seconds = sys.argv[1:7]
    lans = [[Node(spec, db) for spec in lan.split(",")] for lan in (lan1, lan2)]
    nodes = lans[0] + lans[1]
    members = [Node(spec, db, tls=False) for spec in members.split(",")]
    seconds = float(seconds)

    formed(nodes)
    # Each node writes five times, each timed on a node of the other LAN.
    times = [arrival(lans[k % 2][k // 2 % 2], lans[1 - k % 2][k // 4 % 2], f"timed-{k}") for k in range(20)]
    report(write_to_other_lan={"writes": 20, **percentiles(times)})

    kept = checkpoints(members[1])
    acknowledged = {}
    writers = [threading.Thread(target=writes, args=(Node(node.spec, db), f"n{i}", seconds, acknowledged)) for i, node in enumerate(nodes)]
    for thread in writers:
        thread.start()
    # Conflicts across LANs: both LANs create the same documents at once.
    conflicts = {f"c-{j}": [] for j in range(10)}

    def create(k):
        node = Node(lans[k][0].spec, db)
        for doc_id in conflicts:
            status, answer = node.request("PUT", f"/{db}/{doc_id}", {"lan": k})
            if status == 201:
                conflicts[doc_id].append(answer["rev"])
    creators = [threading.Thread(target=create, args=(k,)) for k in (0, 1)]
    for thread in creators:
        thread.start()
    for thread in creators:
        thread.join()
    conflicts = {doc_id: revs for doc_id, revs in conflicts.items() if len(revs) == 2}
    if len(conflicts) < 5:
        fail(f"the LANs made only {len(conflicts)} conflicts of 10 (the other creates arrived first)")
    time.sleep(seconds / 3)
    killed_port = members[0].port
    with open(pidfile) as f:
        os.kill(int(f.read().strip()), signal.SIGKILL)
    killed = time.monotonic()
    moved = {}
    watchers = [threading.Thread(target=failover, args=(Node(node.spec, db), killed_port, killed, moved)) for node in nodes]
    for thread in watchers:
        thread.start()
    for thread in watchers + writers:
        thread.join()
    last_write = time.monotonic()
    if len(moved) != len(nodes):
        fail(f"not every node moved to another member within 60 s: {moved}")
    report(failover_seconds=moved, writes_acknowledged=len(acknowledged))

    everyone = nodes + [members[1]]

    def agree():
        states = [node.state() for node in everyone]
        if states[0] is None or any(s != states[0] for s in states):
            return False
        held = dict(states[0])
        return all(held.get(doc_id) == rev for doc_id, rev in acknowledged.items()) and all(doc_id in held for doc_id in conflicts)
    wait(agree, 180, "every node and the cluster holding the same (id, winning rev) set with every acknowledged write")
    agreed = round(time.monotonic() - last_write, 2)
    # A conflict's losing side may be resolved (a deleted branch on it), never lost: both sides'
    # revisions stay in the document's history everywhere.
    for doc_id, revs in conflicts.items():
        for node in everyone:
            status, leaves = node.request("GET", f"/{db}/{doc_id}?open_revs=all&revs=true")
            history = set()
            for leaf in (leaves if status == 200 else []):
                if "ok" in leaf:
                    ids = leaf["ok"]["_revisions"]
                    history |= {f"{ids['start'] - k}-{rev}" for k, rev in enumerate(ids["ids"])}
            if not set(revs) <= history:
                fail(f"{node.host}:{node.port} lost a side of conflict {doc_id}: its history is {sorted(history)}, the LANs wrote {revs}")
    after = checkpoints(members[1])
    if after != kept:
        fail(f"the checkpoints in the hub changed across the failover (a replication started again): {kept} -> {after}")
    report(agreed_after_last_write=agreed, documents=len(nodes[0].state()), conflicts_same_winner=len(conflicts),
           checkpoints_kept=len(kept))


if __name__ == "__main__":
    main()
