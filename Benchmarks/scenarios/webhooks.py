#!/usr/bin/env python3
"""Webhook delivery against a release `concord serve`, with local receivers in this process.

Four parts, each on its own accounts, each removing them (and so their webhooks) when done, so one
server serves the run (a PostgreSQL database needs no reset between parts):

1. latency  commit-to-receipt p50/p99 of `library.changed` with 1, 100 and 1000 webhooks registered.
            The measured account has one webhook (the fast receiver) and --feeds devices; the other
            webhooks belong to other accounts (10 each, the quota) that write nothing, so they get
            no event. Writes are paced (--rate a second, round-robin over the devices) so that no
            feed changes within minIntervalSeconds (1) of its previous attempt: every commit gets an
            event of its own. Latency: from the write's answer in this client to the receiver's
            first byte of the POST carrying that write's changeToken (one clock, this process).
2. burst    --burst commits as fast as one connection sends them on one device (one webhook): the
            POSTs the receiver got, and whether the last carried the last commit's token.
3. cpu      the server's CPU (utime + stime, /proc) per POST /v1/library/changes (one new asset a
            write, over --cpu-devices devices) with 0 and with 100 webhooks registered (the writing
            account's 10, the 10 server webhooks and 80 on 8 other accounts), in alternating rounds
            (each round in another of the six orders): the machine is shared and noisy. C is B with the 20 webhooks that get the
            writer's events disabled: their events are written and coalesced but held, so C - A is
            the outbox's cost without deliveries. Each round's window is its writes plus 1.5 s, so
            the deliveries it caused are counted in it. The webhooks are created before and deleted
            after each B and C round, outside the window.
4. slow     one account with two webhooks, one to a receiver that answers after --slow-delay s, one
            to a fast receiver; paced writes over --slow-feeds devices for --slow-seconds: events/s
            delivered to the slow one, the fast one's latency meanwhile.

Every POST's Standard Webhooks signature is verified (HMAC-SHA256 of `id.timestamp.body`); a bad one
is counted and shown. Prints Markdown. Run by `Benchmarks/run webhooks`.
"""
import argparse, itertools, base64, hashlib, hmac, json, os, secrets, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from concord_server import ConcordServer

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--database", help="a PostgreSQL URL; default: a fresh SQLite file in --work")
ap.add_argument("--parts", default="latency,burst,cpu,slow")
ap.add_argument("--levels", default="1,100,1000")
ap.add_argument("--samples", type=int, default=200, help="measured commits per level")
ap.add_argument("--feeds", type=int, default=20, help="devices the measured commits are spread over")
ap.add_argument("--rate", type=float, default=10, help="measured commits per second")
ap.add_argument("--burst", type=int, default=10_000)
ap.add_argument("--cpu-writes", type=int, default=1000, help="writes per CPU round")
ap.add_argument("--cpu-rounds", type=int, default=6, help="rounds per variant, each in another order of the three")
ap.add_argument("--cpu-devices", type=int, default=4)
ap.add_argument("--slow-delay", type=float, default=1.0)
ap.add_argument("--slow-seconds", type=float, default=30)
ap.add_argument("--slow-feeds", type=int, default=40)
ap.add_argument("--slow-rate", type=float, default=20)
args = ap.parse_args()
PARTS = args.parts.split(",")
ADMIN = secrets.token_hex(24)
now = time.perf_counter


def log(msg):
    print(f"[webhooks] {msg}", file=sys.stderr, flush=True)


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]


def ms(v):
    return "–" if v != v else f"{v * 1000:.1f}"


# ---------------------------------------------------------------- receivers

class Receipts:
    """What the receivers got, by path: (arrival, event type, changeToken or None, event ID)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_path = {}
        self.secrets = {}       # path → key bytes
        self.bad = 0            # signatures that did not verify (or missing headers)

    def expect(self, path, secret):
        with self.lock:
            self.secrets[path] = base64.b64decode(secret.removeprefix("whsec_"))
            self.by_path.setdefault(path, [])

    def record(self, path, at, headers, body):
        key = self.secrets.get(path)
        wid, ts, sig = headers.get("webhook-id"), headers.get("webhook-timestamp"), headers.get("webhook-signature") or ""
        ok = False
        if key and wid and ts:
            want = base64.b64encode(hmac.new(key, f"{wid}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
            ok = any(hmac.compare_digest(s.removeprefix("v1,"), want) for s in sig.split(" ") if s.startswith("v1,"))
        event = json.loads(body)
        entry = (at, event.get("type"), (event.get("data") or {}).get("changeToken"), event.get("id"))
        with self.lock:
            if not ok:
                self.bad += 1
            self.by_path.setdefault(path, []).append(entry)
        return ok

    def got(self, path):
        with self.lock:
            return list(self.by_path.get(path, []))


RECEIPTS = Receipts()


def receiver(delay):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            at = now()
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            RECEIPTS.record(self.path, at, {k.lower(): v for k, v in self.headers.items()}, body)
            if delay:
                time.sleep(delay)
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


FAST = receiver(0)
SLOW = receiver(args.slow_delay)

# ---------------------------------------------------------------- the server


S = ConcordServer(args.bin, args.database or "sqlite:" + os.path.join(args.work, "webhooks.sqlite"), ADMIN,
                  os.path.join(args.work, "concord.log"), start_seconds=30, call_timeout=120,
                  env=dict(os.environ, CONCORD_WEBHOOKS_ALLOWED_HOSTS="127.0.0.1", CONCORD_WEBHOOKS_SECRET_KEY=secrets.token_hex(32)))
S.start()
ASSET = 0


def account(name):
    a = S.call("POST", "/v1/accounts", ADMIN, {"name": name})
    return a["accountID"], a["accountToken"]


def devices(account_token, n):
    return [S.call("POST", "/v1/devices", account_token, {"name": f"phone {i}", "platform": "iOS"})["deviceToken"] for i in range(n)]


def webhook(token, path, port=None, server=False):
    w = S.call("POST", "/v1/webhooks" if server else "/v1/account/webhooks", token,
               {"url": f"http://127.0.0.1:{port or FAST}{path}", "events": ["library.changed"]})
    RECEIPTS.expect(path, w["secret"])
    return w["webhookID"]


def write(device_token):
    """One small change (one new asset) on the device's library; its changeToken."""
    global ASSET
    ASSET += 1
    fp = base64.urlsafe_b64encode(hashlib.sha256(f"w-{ASSET}".encode()).digest()).decode().rstrip("=")
    body = ('{"assets":{"upsert":[{"localIdentifier":"%08X-0001-4000-8000-000000000001/L0/001","fingerprint":"%s",'
            '"creationDate":"2024-01-01T00:00:00Z","mediaType":"image"}]}}' % (ASSET, fp))
    return S.call("POST", "/v1/library/changes", device_token, body)["changeToken"]


def delete_accounts(ids):
    for i in ids:
        S.call("DELETE", f"/v1/accounts/{i}", ADMIN)


def paced_writes(device_tokens, count, rate):
    """count writes at rate a second, round-robin over the devices: [(changeToken, acknowledged at)]."""
    acks, start = [], now()
    for i in range(count):
        delay = start + i / rate - now()
        if delay > 0:
            time.sleep(delay)
        token = write(device_tokens[i % len(device_tokens)])
        acks.append((token, now()))
    return acks


def latencies(acks, path, wait=5.0):
    """Commit-to-receipt latencies of acks at path (waiting up to `wait` s for stragglers), and the missing count."""
    deadline = now() + wait
    while True:
        first = {}
        for at, _, token, _ in RECEIPTS.got(path):
            first.setdefault(token, at)
        missing = [t for t, _ in acks if t not in first]
        if not missing or now() > deadline:
            break
        time.sleep(0.2)
    return [first[t] - a for t, a in acks if t in first], len(missing)


out = []
say = out.append

# ---------------------------------------------------------------- 1. latency

if "latency" in PARTS:
    levels = [int(x) for x in args.levels.split(",")]
    mid, mtoken = account("measured")
    mdevices = devices(mtoken, args.feeds)
    webhook(mtoken, "/latency")
    fillers, registered = [], 1
    say(f"### Commit-to-receipt latency\n\n{args.samples} commits a level at {args.rate:g}/s over {args.feeds} devices "
        f"(each feed changes every {args.feeds / args.rate:g} s); the measured account has one webhook, the others "
        f"belong to accounts that write nothing (10 each).\n")
    say("| webhooks registered | commits | received | p50 (ms) | p99 (ms) | max (ms) |\n|---:|---:|---:|---:|---:|---:|")
    for level in levels:
        while registered < level:
            fid, ftoken = account(f"filler {len(fillers)}")
            fillers.append(fid)
            for _ in range(min(10, level - registered)):
                webhook(ftoken, f"/filler/{registered}")
                registered += 1
        log(f"latency: {registered} webhooks registered, {args.samples} commits")
        time.sleep(1.5)   # the previous level's feeds are quiet again
        acks = paced_writes(mdevices, args.samples, args.rate)
        lat, missing = latencies(acks, "/latency")
        say(f"| {registered} | {len(acks)} | {len(lat)} | {ms(pct(lat, 50))} | {ms(pct(lat, 99))} | {ms(max(lat) if lat else float('nan'))} |")
        sys.stdout.flush()
    stray = sum(len(RECEIPTS.got(f"/filler/{k}")) for k in range(1, registered))
    say(f"\nPOSTs to the other accounts' webhooks: {stray} (expected 0).\n")
    delete_accounts(fillers + [mid])

# ---------------------------------------------------------------- 2. burst

if "burst" in PARTS:
    bid, btoken = account("burst")
    (device,) = devices(btoken, 1)
    webhook(btoken, "/burst")
    log(f"burst: {args.burst} commits on one feed")
    t0 = now()
    for _ in range(args.burst):
        last = write(device)
    t_last = now()
    deadline = t_last + 15
    while now() < deadline and not any(tok == last for _, _, tok, _ in RECEIPTS.got("/burst")):
        time.sleep(0.1)
    time.sleep(2.5)   # anything that would still come after the last token (nothing should)
    got = RECEIPTS.got("/burst")
    last_at = next((at for at, _, tok, _ in got if tok == last), None)
    ends_with_last = bool(got) and got[-1][2] == last
    say(f"### A burst on one feed\n\n| commits | seconds | commits/s | POSTs received | distinct event IDs | last POST carried the last token | last commit → its receipt (ms) |\n|---:|---:|---:|---:|---:|---|---:|")
    say(f"| {args.burst} | {t_last - t0:.1f} | {args.burst / (t_last - t0):.0f} | {len(got)} | {len({e for *_, e in got})} | "
        f"{'yes' if ends_with_last else 'NO'} | {ms(last_at - t_last) if last_at else 'never'} |\n")
    delete_accounts([bid])

# ---------------------------------------------------------------- 3. cpu

if "cpu" in PARTS:
    wid, wtoken = account("writer")
    wdevices = devices(wtoken, args.cpu_devices)
    others = [account(f"other {k}") for k in range(8)]
    for d in wdevices:   # a first write per device: no round pays for a feed's first change
        write(d)

    def register(r):   # paths of their own each round: a late POST of a deleted webhook still verifies
        made = [("account", wtoken, webhook(wtoken, f"/cpu/{r}/w{k}")) for k in range(10)]
        made += [("server", ADMIN, webhook(ADMIN, f"/cpu/{r}/s{k}", server=True)) for k in range(10)]
        made += [("account", tok, webhook(tok, f"/cpu/{r}/o{k}/{j}")) for k, (_, tok) in enumerate(others) for j in range(10)]
        return made

    def unregister(made):
        for scope, token, hook in made:
            S.call("DELETE", ("/v1/webhooks/" if scope == "server" else "/v1/account/webhooks/") + hook, token)

    def delivered(prefix):
        with RECEIPTS.lock:
            return sum(len(v) for p, v in RECEIPTS.by_path.items() if p.startswith(prefix))

    # "held": the same 100, with the 20 that receive the writer's events disabled: their events are
    # still written and coalesced (held), nothing is delivered — the outbox's cost alone.
    rounds = {0: [], 100: [], "held": []}
    # Each round in another of the six orders, so that over six rounds every variant comes first,
    # and after each other one, equally often (a round leaves work behind it — deleted webhooks'
    # rows, the log's pages, the database's vacuum — that the next one may pay for).
    orders = list(itertools.permutations(rounds))
    for r in range(args.cpu_rounds):
        for variant in orders[r % len(orders)]:
            made = register(f"{r}{variant}") if variant else []
            if variant == "held":
                for scope, token, hook in made[:20]:
                    S.call("PATCH", ("/v1/webhooks/" if scope == "server" else "/v1/account/webhooks/") + hook, token, {"enabled": False})
            time.sleep(2.0)
            log(f"cpu: round {r + 1}/{args.cpu_rounds}, {variant} webhooks, {args.cpu_writes} writes")
            prefix = f"/cpu/{r}{variant}/"
            d0, c0, q0, t0 = delivered(prefix), S.cpu(), S.request_cpu(), now()
            for i in range(args.cpu_writes):
                write(wdevices[i % len(wdevices)])
            wall = now() - t0
            q1 = S.request_cpu()
            time.sleep(1.5)
            rounds[variant].append((S.cpu() - c0, wall, delivered(prefix) - d0, q1 - q0))
            unregister(made)
    say(f"### Server CPU per library write\n\n{args.cpu_writes} writes a round (one new asset each, over {args.cpu_devices} devices of one account, "
        f"one connection), each round in another order of the three; CPU over the writes plus 1.5 s.\n")
    say("The write path is the request threads' CPU (event loops and workers, which run each write's transaction and its "
        "outbox statements) over the writes; the process is everything, deliveries included, over the writes plus 1.5 s. "
        "Medians of the rounds: the machine is shared.\n")
    say("| webhooks registered | rounds | write path per write (µs), each round | median | process per write (µs), each round | median | writes/s | POSTs delivered a round |\n"
        "|---:|---:|---|---:|---|---:|---:|---:|")
    med = {}
    label = {0: "0", 100: "100", "held": "100, the 20 that get events disabled (held: nothing delivered)"}
    median = lambda xs: sorted(xs)[len(xs) // 2] if len(xs) % 2 else sum(sorted(xs)[len(xs) // 2 - 1:len(xs) // 2 + 1]) / 2
    for variant, rs in rounds.items():
        path = [q / args.cpu_writes * 1e6 for *_, q in rs]
        proc = [cpu / args.cpu_writes * 1e6 for cpu, *_ in rs]
        med[variant] = (median(path), median(proc))
        say(f"| {label[variant]} | {len(rs)} | {', '.join(f'{p:.0f}' for p in path)} | {med[variant][0]:.0f} | "
            f"{', '.join(f'{p:.0f}' for p in proc)} | {med[variant][1]:.0f} | "
            f"{len(rs) * args.cpu_writes / sum(w for _, w, *_ in rs):.0f} | {sum(d for _, _, d, _ in rs) / len(rs):.0f} |")
    say(f"\nWrite path, 100 webhooks / 0: **{med[100][0] / med[0][0]:.2f}×** (goal ≤ 1.10); held (no deliveries): "
        f"**{med['held'][0] / med[0][0]:.2f}×**. Process, deliveries included: 100 / 0 **{med[100][1] / med[0][1]:.2f}×**, "
        f"held **{med['held'][1] / med[0][1]:.2f}×**.\n")
    delete_accounts([wid] + [i for i, _ in others])

# ---------------------------------------------------------------- 4. slow

if "slow" in PARTS:
    sid, stoken = account("slow")
    sdevices = devices(stoken, args.slow_feeds)
    webhook(stoken, "/slow", port=SLOW)
    webhook(stoken, "/slow-fast")
    count = int(args.slow_seconds * args.slow_rate)
    log(f"slow: {count} commits at {args.slow_rate:g}/s over {args.slow_feeds} devices, one receiver answering after {args.slow_delay:g} s")
    t0 = now()
    acks = paced_writes(sdevices, count, args.slow_rate)
    t1 = now()
    fast, fast_missing = latencies(acks, "/slow-fast")
    in_window = [at for at, *_ in RECEIPTS.got("/slow") if t0 <= at <= t1]
    slow_lat, _ = latencies(acks, "/slow", wait=0)
    # Until the slow one's last event came (its backlog drained), at most 60 s.
    deadline = now() + 60
    while now() < deadline and not any(tok == acks[-1][0] for _, _, tok, _ in RECEIPTS.got("/slow")):
        time.sleep(0.2)
    drained = next((at for at, _, tok, _ in RECEIPTS.got("/slow") if tok == acks[-1][0]), None)
    say(f"### A slow receiver beside a fast one\n\n{count} commits at {args.slow_rate:g}/s over {args.slow_feeds} devices "
        f"(each feed every {args.slow_feeds / args.slow_rate:g} s), one account, two webhooks: one receiver answers after "
        f"{args.slow_delay:g} s, the other at once.\n")
    say("| receiver | commits | POSTs received | events/s while writing | p50 (ms) | p99 (ms) | last commit → its receipt |\n|---|---:|---:|---:|---:|---:|---:|")
    say(f"| slow ({args.slow_delay:g} s an answer) | {count} | {len(RECEIPTS.got('/slow'))} | {len(in_window) / (t1 - t0):.1f} | "
        f"{ms(pct(slow_lat, 50))} | {ms(pct(slow_lat, 99))} | {f'{drained - acks[-1][1]:.1f} s' if drained else 'not within 60 s'} |")
    say(f"| fast | {count} | {len(RECEIPTS.got('/slow-fast'))} | {len([1 for at, *_ in RECEIPTS.got('/slow-fast') if t0 <= at <= t1]) / (t1 - t0):.1f} | "
        f"{ms(pct(fast, 50))} | {ms(pct(fast, 99))} | {fast_missing} tokens never received |\n")
    say("Latency: commit to the first byte of the POST carrying that commit's token (for the slow one, before its 1 s answer); "
        "the slow receiver's p50/p99 are over the tokens it received.\n")
    delete_accounts([sid])

say(f"Signatures that did not verify: {RECEIPTS.bad} (expected 0).")
S.stop()
print("\n".join(out))
