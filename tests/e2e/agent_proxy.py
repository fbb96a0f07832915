#!/usr/bin/python3
"""A fault-injecting HTTP(S) proxy in front of the real collector, for the agent's end-to-end
tests (Python 3 standard library only). It forwards every request to the collector, except that
POST /api/v1/results is bent by --mode:

  pass                     forward everything
  status:CODE:N[:AFTER]    answer the first N uploads with CODE itself (AFTER: a Retry-After
                           header value, "date+S" meaning an HTTP-date S seconds ahead), then
                           forward
  corrupt                  forward uploads with their body broken (the collector answers 400)
  stall                    forward uploads, then never answer (hold the connection open)

With --cert/--key it speaks HTTPS. It prints "listening on PORT" once ready; GET /__proxy/stats
answers {"uploads": N, "answered": {CODE: count}}.

usage: agent_proxy.py --upstream PORT --mode MODE [--cert FILE --key FILE] [--port PORT]"""

import argparse
import email.utils
import http.client
import http.server
import json
import ssl
import sys
import threading
import time

ARGS = None
LOCK = threading.Lock()
STATS = {"uploads": 0, "answered": {}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("proxy: " + (fmt % args) + "\n")

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with LOCK:
            STATS["answered"][str(status)] = STATS["answered"].get(str(status), 0) + 1

    def forward(self, body):
        conn = http.client.HTTPConnection("127.0.0.1", ARGS.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("host", "content-length", "connection")}
        conn.request(self.command, self.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data, [(k, v) for k, v in resp.getheaders()
                                   if k.lower() in ("retry-after",)]

    def do_GET(self):
        if self.path == "/__proxy/stats":
            with LOCK:
                body = json.dumps(STATS).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        status, data, headers = self.forward(None)
        self.reply(status, data, headers)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/api/v1/results":
            status, data, headers = self.forward(body)
            self.reply(status, data, headers)
            return
        with LOCK:
            STATS["uploads"] += 1
            n = STATS["uploads"]
        mode = ARGS.mode.split(":")
        if mode[0] == "status" and n <= int(mode[2]):
            headers = []
            if len(mode) > 3:
                after = mode[3]
                if after.startswith("date+"):
                    after = email.utils.formatdate(time.time() + float(after[5:]), usegmt=True)
                headers.append(("Retry-After", after))
            err = {"error": {"code": "injected", "message": "injected by the test proxy",
                             "field": ""}}
            self.reply(int(mode[1]), json.dumps(err).encode(), headers)
            return
        if mode[0] == "corrupt":
            body = b"{" + body[: len(body) // 2]
        status, data, headers = self.forward(body)
        if mode[0] == "stall":
            sys.stderr.write("proxy: stalling the reply (%d) to upload %d\n" % (status, n))
            with LOCK:
                STATS["answered"]["stalled"] = STATS["answered"].get("stalled", 0) + 1
            time.sleep(3600)
            return
        self.reply(status, data, headers)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--mode", default="pass")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--port", type=int, default=0)
    ARGS = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    if ARGS.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.cert, ARGS.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
