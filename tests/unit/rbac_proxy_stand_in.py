#!/usr/bin/env python3
"""What kube-rbac-proxy does in front of fabric-exporter, for a scrape test without a cluster.

  rbac_proxy_stand_in.py CERT KEY TOKEN_FILE UPSTREAM PORT_FILE

TLS with CERT and KEY on 127.0.0.1 (the port written to PORT_FILE once listening); GET
/metrics only, passed on to UPSTREAM (http://HOST:PORT) for a request whose bearer token is
TOKEN_FILE's, 401 without a token, 403 with another, 404 for any other path. The real proxy
asks the API server (TokenReview, SubjectAccessReview) where this compares the token; there is
no API server in the unit tier, and kube-rbac-proxy's image cannot be pulled.
"""
import http.server
import os
import ssl
import sys
import urllib.request

cert, key, token_file, upstream, port_file = sys.argv[1:]
token = open(token_file).read().strip()


class Handler(http.server.BaseHTTPRequestHandler):
    timeout = 10

    def do_GET(self):
        if self.path.split("?")[0] != "/metrics":
            return self.send_error(404)
        given = self.headers.get("Authorization", "")
        if not given.startswith("Bearer "):
            return self.send_error(401)
        if given[len("Bearer "):] != token:
            return self.send_error(403)
        with urllib.request.urlopen(upstream + self.path, timeout=10) as answer:
            body = answer.read(64 << 20)
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.headers.get("Content-Type", "text/plain"))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
