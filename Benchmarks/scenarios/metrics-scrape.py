#!/usr/bin/env python3
"""CPU a `GET /metrics` scrape costs the server, for two binaries alternated on fresh SQLite
databases. Each server first serves 30 change batches and 30 mappings (so some samples are not
zero; the per-route and per-operation series, about 2000 lines, exist from the start), then 300
scrapes on one connection; prints the exposition's size and the server's CPU per scrape.

Usage: metrics-scrape.py --before BIN --after BIN [--runs 2] [--scrapes 300]"""
import argparse, http.client, os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concord_server import ConcordServer   # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--before", required=True)
ap.add_argument("--after", required=True)
ap.add_argument("--runs", type=int, default=2)
ap.add_argument("--scrapes", type=int, default=300)
args = ap.parse_args()
ADMIN = "metrics-scrape-admin-token-0123456789"
ASSET = ('{"assets":{"upsert":[{"localIdentifier":"L%d/L0/001","fingerprint":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA%03d",'
         '"creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}]}}')

for run in range(args.runs):
    for label, binary in (("before", args.before), ("after", args.after)):
        work = tempfile.mkdtemp(prefix="metrics-scrape-")
        s = ConcordServer(binary, os.path.join(work, "concord.db"), ADMIN, os.path.join(work, "server.log"))
        s.start()
        try:
            account = s.call("POST", "/v1/accounts", ADMIN, {"name": "scrape"})["accountToken"]
            device = s.call("POST", "/v1/devices", account, {"name": "one"})["deviceToken"]
            for i in range(30):
                s.call("POST", "/v1/library/changes", device, ASSET % (i, i))
                s.call("POST", "/v1/library/cloud-identifiers", device, {"localIdentifiers": ["L%d/L0/001" % i]})
            c = http.client.HTTPConnection("127.0.0.1", s.port)
            c.request("GET", "/metrics")
            body = c.getresponse().read()
            cpu0 = s.cpu()
            for _ in range(args.scrapes):
                c.request("GET", "/metrics")
                c.getresponse().read()
            cpu1 = s.cpu()
            lines = body.count(b"\n")
            print(f"run {run + 1} {label}: {len(body):,} bytes, {lines:,} lines, "
                  f"{(cpu1 - cpu0) / args.scrapes * 1e3:.2f} ms of server CPU per scrape", flush=True)
        finally:
            s.stop()
