"""`concord serve` as a child process of a scenario script: started on a free 127.0.0.1 port, waited
for on /health, called over one kept-alive connection, its CPU (utime + stime) read from /proc.
Shared by change-batches.py and webhooks.py (they import it from this folder)."""
import base64, hashlib, http.client, json, os, random, socket, subprocess, sys, time


class ConcordServer:
    def __init__(self, bin, database, admin, log_path, env=None, start_seconds=20, call_timeout=600):
        self.bin, self.database, self.admin, self.log_path = bin, database, admin, log_path
        self.env, self.start_seconds, self.call_timeout = env, start_seconds, call_timeout

    def start(self):
        probe = socket.socket(); probe.bind(("127.0.0.1", 0)); self.port = probe.getsockname()[1]; probe.close()
        self.log = open(self.log_path, "a")
        self.p = subprocess.Popen([self.bin, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--database", self.database,
                                   "--admin-token", self.admin, "--log-level", "error"], stdout=self.log, stderr=self.log, env=self.env)
        for _ in range(self.start_seconds * 10):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2); c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if self.p.poll() is not None:
                sys.exit(f"concord exited ({self.p.returncode}) before serving; see {self.log.name}")
            time.sleep(0.1)
        else:
            sys.exit(f"concord did not answer /health within {self.start_seconds} s; see {self.log.name}")
        self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.call_timeout)

    def cpu(self):
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def request_cpu(self):
        """CPU (utime + stime) of the threads that serve requests: the event loops (`concord-loop-N`)
        and the workers (`concord-work-N`), which run each request's transaction. Background work
        (webhook deliveries, the scheduler, snapshot saves) runs on other threads and is left out."""
        total = 0
        for tid in os.listdir(f"/proc/{self.p.pid}/task"):
            try:
                name = open(f"/proc/{self.p.pid}/task/{tid}/comm").read().strip()
                if name.startswith(("concord-loop", "concord-work")):
                    f = open(f"/proc/{self.p.pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                    total += int(f[11]) + int(f[12])
            except OSError:
                pass   # a thread that ended meanwhile
        return total / os.sysconf("SC_CLK_TCK")

    def call(self, method, path, token, payload=None):
        """The answer's JSON (None when empty); exits on a status of 300 or more. `payload`: JSON
        text, or a value to encode."""
        headers = {"Authorization": "Bearer " + token}
        body = None
        if payload is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(payload) if not isinstance(payload, str) else payload
        self.c.request(method, path, body=body, headers=headers)
        r = self.c.getresponse(); data = r.read()
        if r.status >= 300:
            sys.exit(f"{method} {path}: {r.status} {data[:300]!r}")
        return json.loads(data) if data else None

    def stop(self):
        self.p.terminate(); self.p.wait(timeout=60)


def photo_fingerprint(i):
    """Synthetic photo i's fingerprint: SHA-256 of "w-<i>", base64url without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(f"w-{i}".encode()).digest()).decode().rstrip("=")


def two_device_account(server, admin, assets, seed=9):
    """A new account with devices "one" and "two", and `assets` PhotoKit-shaped random local
    identifiers (`UUID/L0/001`, from `seed`) for each: (tokens, identifiers), both keyed 1 and 2."""
    rng = random.Random(seed)
    def rid(): return "%08X-%04X-4%03X-8%03X-%012X/L0/001" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48))
    ids = {1: [rid() for _ in range(assets)], 2: [rid() for _ in range(assets)]}
    account = server.call("POST", "/v1/accounts", admin, {"name": "w"})["accountToken"]
    tokens = {d: server.call("POST", "/v1/devices", account, {"name": name})["deviceToken"] for d, name in ((1, "one"), (2, "two"))}
    return tokens, ids
