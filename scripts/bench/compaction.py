#!/usr/bin/env python3
"""How long writes wait while a release `syncnode serve` compacts a big database:

    compaction.py BIN_DIR [MB]      (default 1024)

A database of MB megabytes of 100 KB documents, a tenth of them updated (so compaction has
something to drop, and a big file to rewrite), is served; a writer creates small documents one after another, timing each,
while `POST /db/_compact` runs until `compact_running` is false. Prints the compaction's time,
the file's size before and after (WAL included), and the writes' p50, p99 and longest wait during it, against the same writer before it.
"""
import http.client, json, os, shutil, ssl, statistics, subprocess, sys, tempfile, threading, time

bin_dir = sys.argv[1]
megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
syncnode = os.path.join(bin_dir, "syncnode")


def main():
    work = tempfile.mkdtemp(prefix="syncnode-compaction-")
    node = None
    try:
        count = (megabytes << 20) // (100 << 10)
        lines = os.path.join(work, "docs.jsonl")
        with open(lines, "w") as f:
            for i in range(count):
                f.write(json.dumps({"_id": f"doc{i:06d}", "n": i, "text": chr(97 + i % 26) * (100 << 10)}) + "\n")
        subprocess.run([syncnode, "--dir", os.path.join(work, "node"), "import", "db", lines], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.remove(lines)
        node = subprocess.Popen(
            [syncnode, "--dir", os.path.join(work, "node"), "serve", "--anonymous", "--no-advertise", "--no-browse", "--qr", "none"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = int(node.stdout.readline().split("https://127.0.0.1:")[1].split("/")[0])
        context = ssl.create_default_context(cafile=os.path.join(work, "node", ".node", "tls", "cert.pem"))
        context.check_hostname = False
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=600)

        def call(method, path, value=None):
            connection.request(method, path, body=None if value is None else json.dumps(value), headers={"Content-Type": "application/json"})
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read() or b"null")

        # A tenth of the documents updated: their old bodies are what compaction drops.
        for start in range(0, count // 10, 100):
            status, rows = call("POST", "/db/_all_docs", {"keys": [f"doc{i:06d}" for i in range(start, min(count // 10, start + 100))]})
            docs = [{"_id": r["id"], "_rev": r["value"]["rev"], "n": -1, "text": "updated"} for r in rows["rows"]]
            call("POST", "/db/_bulk_docs", {"docs": docs})

        stop = threading.Event()
        waits = []  # (started, seconds)

        def writer():
            w = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=600)
            i = 0
            while not stop.is_set():
                started = time.monotonic()
                w.request("PUT", f"/db/w{i:07d}", body=json.dumps({"i": i}), headers={"Content-Type": "application/json"})
                answer = w.getresponse()
                answer.read()
                if answer.status != 201:
                    raise SystemExit(f"a write during compaction got {answer.status}")
                waits.append((started, time.monotonic() - started))
                i += 1

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        time.sleep(3)
        size_before = call("GET", "/db")[1]["sizes"]["file"]
        compact_started = time.monotonic()
        call("POST", "/db/_compact")
        while call("GET", "/db")[1]["compact_running"]:
            time.sleep(0.05)
        compact_ended = time.monotonic()
        size_after = call("GET", "/db")[1]["sizes"]["file"]
        time.sleep(1)
        stop.set()
        thread.join()
        before = sorted(s for t, s in waits if t < compact_started)
        during = sorted(s for t, s in waits if compact_started <= t < compact_ended)
        def figures(values):
            return (f"{len(values)} writes, p50 {statistics.median(values) * 1000:.1f} ms, "
                    f"p99 {values[int(len(values) * 0.99)] * 1000:.1f} ms, longest {values[-1] * 1000:.0f} ms") if values else "no writes"
        print(f"compaction of {megabytes} MB ({count} documents, a tenth updated) took {compact_ended - compact_started:.1f} s; "
              f"the file went from {size_before / 1e6:.0f} MB to {size_after / 1e6:.0f} MB")
        print(f"writes before it: {figures(before)}")
        print(f"writes during it: {figures(during)}")
    finally:
        if node:
            node.terminate()
            node.wait()
        shutil.rmtree(work, ignore_errors=True)


main()
