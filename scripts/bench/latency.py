#!/usr/bin/env python3
"""What a LAN's latency costs a pull of many attachments, whole processes:

    latency.py BIN_DIR [DELAY_MS ...]     (default 0 1 3)

A node (`syncnode serve`, plain HTTP on loopback) holds 1,000 documents with a 100 KB
attachment each. `syncnode sync --pull` copies them into a new directory through a TCP proxy
that delays every byte by DELAY_MS each way (a round trip of twice that), twice per delay,
alternated: as the node offers itself (a batch's attachments in a few multipart `_bulk_get`
answers), and with the proxy hiding that offer from the node's welcome, as from CouchDB or an
older node (one request per attachment, four at a time). Prints each pull's time and the
ratio batched / one at a time.
"""
import asyncio, base64, json, os, random, shutil, subprocess, sys, tempfile, threading, time, urllib.request

bin_dir = sys.argv[1]
delays = [float(d) for d in sys.argv[2:]] or [0, 1, 3]
syncnode = os.path.join(bin_dir, "syncnode")
FEATURE = b"multipart-bulk-get"


class DelayProxy:
    """A TCP proxy on loopback delaying every byte by `delay` seconds each way; with `hide`, it
    renames the feature in answers (same length, so every Content-Length stays true)."""

    def __init__(self, target, delay, hide):
        self.target, self.delay, self.hide = target, delay, hide
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def stop(self):
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def pipe(self, reader, writer, answers):
        queue = asyncio.Queue()

        async def pump():
            while (item := await queue.get())[1]:
                wait = item[0] + self.delay - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(item[1])
                await writer.drain()
            writer.close()

        task = asyncio.create_task(pump())
        while True:
            data = await reader.read(1 << 16)
            if answers and self.hide:
                data = data.replace(FEATURE, b"x" * len(FEATURE))
            queue.put_nowait((time.monotonic(), data))
            if not data:
                break
        await task

    async def handle(self, client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target)
        await asyncio.gather(self.pipe(client_reader, server_writer, False), self.pipe(server_reader, client_writer, True),
                             return_exceptions=True)


def main():
    root = tempfile.mkdtemp(prefix="syncnode-bench-latency-")
    serve = subprocess.Popen([syncnode, "--dir", os.path.join(root, "node"), "serve", "--host", "127.0.0.1", "--anonymous",
                              "--no-tls", "--no-advertise", "--no-browse", "--qr", "none"], stdout=subprocess.PIPE, text=True)
    try:
        line = serve.stdout.readline()
        if "listening on" not in line:
            sys.exit(f"serve printed {line!r}")
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        rng = random.Random(1)
        for start in range(0, 1000, 100):
            docs = [{"_id": f"photo-{i}", "_attachments": {"photo": {"content_type": "image/jpeg",
                     "data": base64.b64encode(rng.randbytes(100_000)).decode()}}} for i in range(start, start + 100)]
            request = urllib.request.Request(f"http://127.0.0.1:{port}/default/_bulk_docs", data=json.dumps({"docs": docs}).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            urllib.request.urlopen(request).read()
        print("latency: 1,000 documents with a 100 KB attachment each, pulled through a proxy that delays each way")
        for delay in delays:
            seconds = {}
            for _ in range(2):
                for hide in (False, True):
                    proxy = DelayProxy(port, delay / 1000, hide)
                    target = os.path.join(root, "pulled")
                    began = time.monotonic()
                    pull = subprocess.run([syncnode, "--dir", target, "sync", f"http://127.0.0.1:{proxy.port}/default", "--pull"],
                                          capture_output=True, text=True)
                    took = time.monotonic() - began
                    if pull.returncode != 0 or json.loads(pull.stdout)["pulled"] != 1000:
                        sys.exit(f"pull failed: {pull.stdout} {pull.stderr}")
                    shutil.rmtree(target)
                    proxy.stop()
                    seconds.setdefault(hide, []).append(took)
            batched, alone = seconds[False], seconds[True]
            print(f"  {delay:g} ms each way: batched {' '.join(f'{s:.2f}' for s in batched)} s, one at a time "
                  f"{' '.join(f'{s:.2f}' for s in alone)} s, ratio {min(batched) / min(alone):.2f} (best of each)")
    finally:
        serve.terminate()
        serve.wait()
        shutil.rmtree(root, ignore_errors=True)


main()
