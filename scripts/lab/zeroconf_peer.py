"""An independent DNS-SD peer for the multi-node test, on the pure-Python
`zeroconf` package (no Avahi involved).

  zeroconf_peer.py browse SECONDS
      prints one JSON line per _syncnode._tcp service resolved: name, port, addresses, txt
  zeroconf_peer.py publish NAME ADDRESS PORT UUID
      advertises a SyncNode-shaped service (plain HTTP, no auth) and answers
      GET / with {"uuid": UUID} on ADDRESS:PORT until killed
"""
import http.server
import json
import signal
import socket
import sys
import threading
import time

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceListener, Zeroconf

TYPE = "_syncnode._tcp.local."


def browse(seconds):
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    seen = set()

    class Listener(ServiceListener):
        def add_service(self, zc, type_, name):
            info = zc.get_service_info(type_, name, timeout=3000)
            if info is None or name in seen:
                return
            seen.add(name)
            txt = {k.decode(): (v.decode() if v is not None else None) for k, v in info.properties.items()}
            print(json.dumps({"name": name[: -len("." + TYPE)], "port": info.port,
                              "addresses": info.parsed_addresses(), "txt": txt}), flush=True)

        def update_service(self, zc, type_, name):
            pass

        def remove_service(self, zc, type_, name):
            pass

    ServiceBrowser(zc, TYPE, Listener())
    time.sleep(seconds)
    zc.close()


def publish(name, address, port, uuid):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"couchdb": "Welcome", "uuid": uuid}).encode()
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((address, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    info = ServiceInfo(TYPE, f"{name}.{TYPE}", addresses=[socket.inet_aton(address)], port=port,
                       properties={"v": "1", "uuid": uuid, "dbs": "default", "tls": "0", "auth": "none"})
    zc.register_service(info)
    # SIGTERM unwinds through `finally`, which says goodbye (a background job of a script ignores SIGINT).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("published", flush=True)
    try:
        while True:
            time.sleep(1)
    finally:
        zc.unregister_service(info)
        zc.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["browse"]:
        browse(float(sys.argv[2]))
    elif sys.argv[1:2] == ["publish"]:
        publish(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(__doc__)
