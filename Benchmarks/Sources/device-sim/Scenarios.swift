// The two scenarios: mapping and journal. Each sets up its own account.
import ConcordJSON
import Foundation

// MARK: - Small helpers

func f(_ value: Double, _ digits: Int = 2) -> String { String(format: "%.\(digits)f", value) }

/// Warm load of one direction: Concord's and the peer's echo of the very same request bytes.
struct WarmDirection {
    var name: String
    var requests: [RawRequest]
    var concord = LoadResult()
    var echo = LoadResult()
}

/// Waits (at most `limit` seconds) until the server has been idle for half a second: background
/// work left by an earlier phase (the cold passes' writes) is not billed to a measured round.
func settle(_ server: ServerProcess?, limit: Double = 15) {
    guard let server else { return }
    let t0 = now()
    var last = server.cpuSeconds()
    while now() - t0 < limit {
        usleep(500_000)
        let cpu = server.cpuSeconds()
        if cpu - last < 0.02 { return }
        last = cpu
    }
}

/// The warm rounds of both directions, measured alike: after an unmeasured warm-up of each
/// (server, direction) pair, `s.rounds` rounds each run Concord and the peer's echo of the same
/// batches for both directions, the order reversed every other round (Concord local → cloud,
/// peer, Concord cloud → local, peer; then the other way round), so that neither server nor
/// direction always runs first, and a burst of load from elsewhere on the machine hits all four.
func warmRounds(_ directions: inout [WarmDirection], _ s: Settings) throws {
    let servers: [(name: String, port: Int, process: ServerProcess?)] =
        [("Concord", s.port, s.server)] + (s.peerPort.map { [("peer echo", $0, s.peer)] } ?? [])
    // Warm-up: one second each, not measured (the peer's first request of a route included).
    for d in directions {
        for server in servers {
            _ = try runLoad(port: server.port, clients: s.clients, requests: d.requests, duration: min(1, s.seconds), server: nil)
        }
    }
    settle(s.server)
    var order: [(direction: Int, server: Int)] = []
    for d in directions.indices { for k in servers.indices { order.append((d, k)) } }
    for round in 1...s.rounds {
        for (d, k) in round % 2 == 1 ? order : order.reversed() {
            let server = servers[k]
            log("warm \(directions[d].name) round \(round)/\(s.rounds): \(server.name) \(f(s.seconds, 0))s")
            let result = try runLoad(port: server.port, clients: s.clients, requests: directions[d].requests, duration: s.seconds, server: server.process)
            if k == 0 { directions[d].concord.merge(result) } else { directions[d].echo.merge(result) }
        }
    }
}

func parseObject(_ bytes: [UInt8]) throws -> JSONObject {
    guard case .object(let object) = try JSONValue.parse(bytes) else { throw ClientError(description: "answer is not a JSON object") }
    return object
}

func stringField(_ object: JSONObject, _ key: String) throws -> String {
    guard case .string(let value)? = object[key] else { throw ClientError(description: "answer lacks string \"\(key)\"") }
    return value
}

func print(markdown lines: String...) { for line in lines { print(line) } }

/// An account with devices, and each device's token.
struct SimAccount {
    var accountToken: String
    var deviceTokens: [String]

    init(_ s: Settings, devices: Int) throws {
        let name = "sim-\(Int(Date().timeIntervalSince1970))"
        let account = try parseObject(call(s.port, RawRequest("POST", "/v1/accounts", token: s.adminToken,
                                                                 body: Array(#"{"name":"\#(name)"}"#.utf8)), expect: 201))
        let accountToken = try stringField(account, "accountToken")
        self.accountToken = accountToken
        self.deviceTokens = try (0..<devices).map { d in
            let device = try parseObject(call(s.port, RawRequest("POST", "/v1/devices", token: accountToken,
                                                                    body: Array(#"{"name":"sim-device-\#(d + 1)","platform":"iOS"}"#.utf8)), expect: 201))
            return try stringField(device, "deviceToken")
        }
    }
}

struct UploadResult {
    var seconds: Double
    var serverCPU: Double
    var bytes: Int
    var changeToken: String
    var emptyToken: String
    var inserted: Int
}

/// `PUT /v1/library` with the whole manifest, timed (wall clock and server CPU).
func upload(_ s: Settings, token: String, library: DeviceLibrary, photos: PhotoSet,
            knowledge: DeviceLibrary.Knowledge = .fingerprints) throws -> UploadResult {
    let empty = try stringField(parseObject(call(s.port, RawRequest("GET", "/v1/library/token", token: token))), "changeToken")
    let body = library.manifest(photos, knowledge: knowledge)
    let request = RawRequest("PUT", "/v1/library", token: token, body: body)
    let connection = try HTTPConnection(port: s.port)
    let cpu0 = s.server?.cpuSeconds() ?? 0
    let t0 = now()
    let answer = try connection.send(request)
    let seconds = now() - t0
    let cpu = (s.server?.cpuSeconds() ?? 0) - cpu0
    guard answer.status == 200 else {
        throw ClientError(description: "PUT /v1/library: \(answer.status) \(String(decoding: answer.body.prefix(400), as: UTF8.self))")
    }
    let object = try parseObject(answer.body)
    var inserted = 0
    if case .number(let n)? = object["inserted"] { inserted = Int(n) }
    return UploadResult(seconds: seconds, serverCPU: cpu, bytes: body.count, changeToken: try stringField(object, "changeToken"),
                        emptyToken: empty, inserted: inserted)
}

/// Mapping answers → (identifier asked, found value or error name), in request order.
func mappings(_ body: [UInt8], askedKey: String, foundKey: String) throws -> [(String, found: String?, error: String?)] {
    let object = try parseObject(body)
    guard case .array(let items)? = object["mappings"] else { throw ClientError(description: "answer lacks mappings") }
    return items.map { item in
        guard case .object(let m) = item else { return ("", nil, "notAnObject") }
        var asked = "", found: String?, error: String?
        if case .string(let v)? = m[askedKey] { asked = v }
        if case .string(let v)? = m[foundKey] { found = v }
        if case .object(let e)? = m["error"], case .string(let name)? = e["name"] { error = name }
        return (asked, found, error)
    }
}

/// One row of the phase table.
func phaseRow(_ name: String, _ r: LoadResult, idsPerRequest: Int) -> String {
    let ids = Double(r.requests * idsPerRequest)
    let cpuPerID = ids > 0 ? r.serverCPU / ids * 1e6 : 0
    let busy = r.seconds > 0 ? r.serverCPU / r.seconds : 0
    return "| \(name) | \(r.requests) | \(Int(ids)) | \(f(r.seconds, 1)) | \(f(r.requestsPerSecond, 0)) | \(f(r.requestsPerSecond * Double(idsPerRequest), 0)) | \(f(r.percentile(50))) | \(f(r.percentile(99))) | \(f(r.cpuPerRequestMS)) | \(f(cpuPerID, 2)) | \(f(busy)) | \(r.errors) |"
}

let phaseHeader = """
| phase | requests | identifiers | wall s | requests/s | identifiers/s | p50 ms | p99 ms | server CPU per request (ms) | server CPU per identifier (µs) | server busy (cores) | errors |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
"""

func met(_ ok: Bool) -> String { ok ? "**met**" : "**not met**" }

// MARK: - Mapping

func mappingScenario(_ s: Settings) throws {
    let t0 = now()
    let photos = PhotoSet(count: Int((Double(s.assets) * 10 / 9).rounded()))
    let libraries = (0..<s.devices).map { DeviceLibrary(device: $0, assets: s.assets, photos: photos) }
    log("generated \(s.devices) libraries of \(s.assets) assets (\(photos.fingerprints.count) shared photos) in \(f(now() - t0))s")
    let account = try SimAccount(s, devices: s.devices)

    // Keyed (`--keyed`): every device sends PhotoKit's keys and no fingerprint (one iCloud library).
    // Otherwise fingerprints, except that the last of three or more devices has hashed nothing yet:
    // the wanted list's device.
    // `--keyed-hashed`: keys and fingerprints (what the keys cost the index, against the plain run).
    let wantedDevice = !s.keyed && s.devices >= 3 ? s.devices - 1 : nil
    func knowledge(_ d: Int) -> DeviceLibrary.Knowledge {
        if s.keyed { return .keys }
        if d == wantedDevice { return .nothing }
        return s.keyedHashed ? .keysAndFingerprints : .fingerprints
    }
    var uploads: [UploadResult] = []
    for (d, library) in libraries.enumerated() {
        log("PUT /v1/library device \(d + 1)/\(s.devices)…")
        let u = try upload(s, token: account.deviceTokens[d], library: library, photos: photos, knowledge: knowledge(d))
        log("  \(f(u.seconds))s wall, \(f(u.serverCPU))s server CPU, inserted \(u.inserted)")
        uploads.append(u)
    }
    let rssAfterUpload = s.server?.memoryMiB("VmHWM") ?? 0
    let rssNowAfterUpload = s.server?.memoryMiB("VmRSS") ?? 0

    // The account's mapping index is loaded by its first mapping request: one identifier, so the
    // request is the load (every device's objects and the records, one streamed query per table).
    let load = try measureIndexLoad(s, token: account.deviceTokens[0], identifier: libraries[0].localIdentifiers[0],
                                    objects: s.devices * (s.assets + 10))

    // Local → cloud on device 1: the first pass creates the records (cold), later passes find links (warm).
    let d1 = account.deviceTokens[0], d2 = account.deviceTokens[1]
    let l2c = stride(from: 0, to: s.assets, by: s.batch).map { start in
        RawRequest("POST", "/v1/library/cloud-identifiers", token: d1,
                   body: identifiersBody("localIdentifiers", libraries[0].localIdentifiers[start..<min(start + s.batch, s.assets)]))
    }
    log("cold local→cloud on device 1: \(l2c.count) batches…")
    let cold = try runLoad(port: s.port, clients: s.clients, requests: l2c, server: s.server, keepBodies: true)
    var cloudIDs: [String] = []
    var coldOutcomes: [String: Int] = [:]
    for body in cold.bodies where !body.isEmpty {
        for m in try mappings(body, askedKey: "localIdentifier", foundKey: "cloudIdentifier") {
            if let c = m.found { cloudIDs.append(c); coldOutcomes["found", default: 0] += 1 } else { coldOutcomes[m.error ?? "?", default: 0] += 1 }
        }
    }

    // Cloud → local on device 2 with device 1's identifiers: the first pass resolves by content and stores links.
    let c2l = stride(from: 0, to: cloudIDs.count, by: s.batch).map { start in
        RawRequest("POST", "/v1/library/local-identifiers", token: d2,
                   body: identifiersBody("cloudIdentifiers", cloudIDs[start..<min(start + s.batch, cloudIDs.count)]))
    }
    log("cold cloud→local on device 2: \(c2l.count) batches…")
    let coldBack = try runLoad(port: s.port, clients: s.clients, requests: c2l, server: s.server, keepBodies: true)
    var backOutcomes: [String: Int] = [:]
    for body in coldBack.bodies where !body.isEmpty {
        for m in try mappings(body, askedKey: "cloudIdentifier", foundKey: "localIdentifier") {
            backOutcomes[m.found != nil ? "found" : (m.error ?? "?"), default: 0] += 1
        }
    }
    // Both directions' warm rounds, interleaved, once both cold passes are done.
    var directions = [WarmDirection(name: "local→cloud", requests: l2c), WarmDirection(name: "cloud→local", requests: c2l)]
    try warmRounds(&directions, s)
    let (warm, echo) = (directions[0].concord, directions[0].echo)
    let (warmBack, echoBack) = (directions[1].concord, directions[1].echo)

    // Change feed on device 3: small changes (10 favourites toggled each), then the feed read in pages.
    let feedDevice = min(2, s.devices - 1)
    let d3 = account.deviceTokens[feedDevice]
    let smallChanges = 100
    var writes: [RawRequest] = []
    for c in 0..<smallChanges {
        var w = JSONWriter(capacity: 2048)
        w.beginObject(); w.key("assets"); w.beginObject(); w.key("upsert"); w.beginArray()
        for k in 0..<10 {
            let i = (c * 10 + k) % s.assets
            let p = libraries[feedDevice].photoIndex[i]
            w.beginObject()
            w.key("localIdentifier"); w.string(libraries[feedDevice].localIdentifiers[i])
            if knowledge(feedDevice) != .keys { w.key("fingerprint"); w.string(photos.fingerprints[p]) }   // else kept as stored
            w.key("mediaType"); w.string(p % 20 == 0 ? "video" : "image")
            w.key("creationDate"); w.string(photos.dates[p])
            w.key("isFavorite"); w.bool(p % 37 != 0)   // flipped: an update
            w.endObject()
        }
        w.endArray(); w.endObject(); w.endObject()
        writes.append(RawRequest("POST", "/v1/library/changes", token: d3, body: w.bytes))
    }
    log("change feed: \(smallChanges) small changes on device \(feedDevice + 1)…")
    let smallWrites = try runLoad(port: s.port, clients: 1, requests: writes, server: s.server)
    // Walk the feed once to learn each page's `since`, then read those pages under load.
    let pageLimit = 10
    var pageRequests: [RawRequest] = []
    var since = uploads[feedDevice].changeToken
    while true {
        let path = "/v1/library/changes?since=\(since)&limit=\(pageLimit)"
        let page = try parseObject(call(s.port, RawRequest("GET", path, token: d3)))
        guard case .array(let changes)? = page["changes"], !changes.isEmpty else { break }
        pageRequests.append(RawRequest("GET", path, token: d3))
        since = try stringField(page, "changeToken")
        if case .bool(false)? = page["hasMore"] { break }
    }
    log("change feed: \(pageRequests.count) pages of \(pageLimit) under load, \(f(s.seconds, 0))s")
    let feed = pageRequests.isEmpty ? LoadResult()
        : try runLoad(port: s.port, clients: s.clients, requests: pageRequests, duration: s.seconds, server: s.server)
    // The initial upload is one change listing every asset: one page holding it.
    let bigPage = [RawRequest("GET", "/v1/library/changes?since=\(uploads[feedDevice].emptyToken)&limit=1", token: d3)]
    var big = LoadResult()
    var bigBytes = 0
    for _ in 0..<3 {
        let r = try runLoad(port: s.port, clients: 1, requests: bigPage, server: s.server, keepBodies: true)
        bigBytes = r.bodies.first?.count ?? 0
        big.merge(r)
    }
    // Fingerprints on demand: the first page of the hash-nothing device's wanted list, and its
    // status, against the account whose records devices 1 and 2 linked.
    var wanted = LoadResult(), status = LoadResult()
    var wantedTotal = 0
    var wantedFirst = (wall: 0.0, cpu: 0.0)
    if let w = wantedDevice {
        let token = account.deviceTokens[w]
        // The first read after the mapping writes makes the pass (account records, then the
        // device's objects); later pages and polls read what it kept.
        let cpu0 = s.server?.cpuSeconds() ?? 0
        let t0 = now()
        let first = try parseObject(call(s.port, RawRequest("GET", "/v1/library/wanted?limit=1000", token: token)))
        wantedFirst = (now() - t0, (s.server?.cpuSeconds() ?? 0) - cpu0)
        if case .number(let n)? = first["total"] { wantedTotal = Int(n) }
        log("wanted: first page of device \(w + 1) (total \(wantedTotal)), \(f(s.seconds, 0))s")
        wanted = try runLoad(port: s.port, clients: 1, requests: [RawRequest("GET", "/v1/library/wanted?limit=1000", token: token)],
                             duration: s.seconds, server: s.server)
        status = try runLoad(port: s.port, clients: 1, requests: [RawRequest("GET", "/v1/library/status", token: token)],
                             duration: s.seconds, server: s.server)
    }
    let peakRSS = s.server?.memoryMiB("VmHWM") ?? 0
    let endRSS = s.server?.memoryMiB("VmRSS") ?? 0

    // MARK: report
    print(markdown: "", "## Mapping\(s.keyed ? ", keyed (PhotoKit keys, no fingerprints)" : s.keyedHashed ? ", keys and fingerprints" : "") — \(s.devices) devices × \(s.assets) assets, batches of \(s.batch), \(s.clients) concurrent keep-alive connections", "")
    print("Synthetic libraries: a shared set of \(photos.fingerprints.count) photos (fingerprint = SHA-256 of synthetic content, base64url); each device holds a random ~90% subset plus \(libraries[0].duplicates) duplicates (2%: the same fingerprint twice), and \(libraries[0].albums.count) albums of 50–200 assets.")
    print(markdown: "", "| `PUT /v1/library` (whole manifest) | assets + albums | body MB | wall s | server CPU s | inserted |", "|---|---:|---:|---:|---:|---:|")
    for (d, u) in uploads.enumerated() {
        print("| device \(d + 1) | \(s.assets) + \(libraries[d].albums.count) | \(f(Double(u.bytes) / 1e6, 1)) | \(f(u.seconds)) | \(f(u.serverCPU)) | \(u.inserted) |")
    }
    print(markdown: "", phaseHeader)
    print(phaseRow("local→cloud, cold (device 1, creates records)", cold, idsPerRequest: s.batch))
    print(phaseRow("local→cloud, warm (device 1, linked)", warm, idsPerRequest: s.batch))
    if s.peerPort != nil { print(phaseRow("Hummingbird peer: echo of the same batches", echo, idsPerRequest: s.batch)) }
    print(phaseRow("cloud→local, cold (device 2, resolves by \(s.keyed ? "key" : "content"), links)", coldBack, idsPerRequest: s.batch))
    print(phaseRow("cloud→local, warm (device 2)", warmBack, idsPerRequest: s.batch))
    if s.peerPort != nil { print(phaseRow("Hummingbird peer: echo of the same cloud→local batches", echoBack, idsPerRequest: s.batch)) }
    print(phaseRow("`POST /v1/library/changes`, 10 assets each, 1 client", smallWrites, idsPerRequest: 10))
    print(phaseRow("`GET /v1/library/changes` pages of \(pageLimit) small changes", feed, idsPerRequest: pageLimit))
    if let w = wantedDevice {
        print(phaseRow("`GET /v1/library/wanted?limit=1000`, device \(w + 1) without fingerprints (total \(wantedTotal)), 1 client", wanted, idsPerRequest: 1000))
        print("| `GET /v1/library/wanted?limit=1000`, the first after the mapping writes (the pass over the account) | 1 | 1000 | \(f(wantedFirst.wall, 3)) | | | | | \(f(wantedFirst.cpu * 1000)) | | | |")
        print(phaseRow("`GET /v1/library/status`, device \(w + 1), 1 client", status, idsPerRequest: 1))
    }
    print(phaseRow("`GET /v1/library/changes` the upload's change (\(s.assets) ids, \(f(Double(bigBytes) / 1e6, 1)) MB), 1 client", big, idsPerRequest: 1))
    func outcomes(_ o: [String: Int]) -> String { o.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
    print(markdown: "", "Answers of the cold passes — local→cloud: \(outcomes(coldOutcomes)); cloud→local on device 2: \(outcomes(backOutcomes)).")
    for (name, r) in [("cold", cold), ("warm", warm), ("peer", echo), ("cold back", coldBack), ("warm back", warmBack), ("peer back", echoBack),
                      ("writes", smallWrites), ("feed", feed)] {
        if let e = r.firstError { print("First error (\(name)): `\(e.prefix(200))`") }
    }

    let warmCPU = warm.cpuPerRequestMS, warmP99 = warm.percentile(99)
    let rpsRatio = echo.requestsPerSecond > 0 ? warm.requestsPerSecond / echo.requestsPerSecond : 0
    let cpuRatio = echo.cpuPerRequestMS > 0 ? warm.cpuPerRequestMS / echo.cpuPerRequestMS : 0
    let worstUpload = uploads.map(\.seconds).max() ?? 0
    print(markdown: "", "| target | measured | |", "|---|---|---|")
    print("| \(s.batch)-id batch against a \(s.assets)-asset library ≤ 2 ms server CPU (≥ 500 000 ids/s on one core) | warm \(f(warmCPU)) ms (\(f(warmCPU > 0 ? Double(s.batch) / warmCPU * 1000 : 0, 0)) ids per CPU-second); cold \(f(cold.cpuPerRequestMS)) ms | \(met(warmCPU > 0 && warmCPU <= 2)) (warm) |")
    print("| p99 < 10 ms at \(s.clients) clients | warm \(f(warmP99)) ms (p50 \(f(warm.percentile(50))) ms) | \(met(warmP99 > 0 && warmP99 < 10)) |")
    if s.peerPort != nil {
        print("| Concord lookup ≥ 3× the peer's echo (requests/s) | \(f(rpsRatio))× (server CPU per request: \(f(cpuRatio))× the peer's) | \(met(rpsRatio >= 3)) |")
        // Both directions against the echo of their own batches, by server CPU per request.
        for (name, mine, peer) in [("local → cloud", warm, echo), ("cloud → local", warmBack, echoBack)] {
            let ratio = mine.cpuPerRequestMS > 0 ? peer.cpuPerRequestMS / mine.cpuPerRequestMS : 0
            let rps = peer.requestsPerSecond > 0 ? mine.requestsPerSecond / peer.requestsPerSecond : 0
            print("| \(name) ≥ 10× the peer's echo of the same batches (server CPU per request: the peer's / Concord's) | \(f(ratio))× (\(f(peer.cpuPerRequestMS)) / \(f(mine.cpuPerRequestMS)) ms; requests/s \(f(rps))×) | \(met(ratio >= 10)) |")
        }
        print("| cloud → local ≤ 0.15 ms server CPU per warm \(s.batch)-id batch | \(f(warmBack.cpuPerRequestMS)) ms (local → cloud \(f(warm.cpuPerRequestMS)) ms; whole requests: HTTP, JSON and lookup) | \(met(warmBack.cpuPerRequestMS > 0 && warmBack.cpuPerRequestMS <= 0.15)) |")
    }
    print("| \(s.assets)-asset manifest accepted < 5 s | slowest \(f(worstUpload)) s of \(s.devices) | \(met(worstUpload < 5)) |")
    print("| mapping index of the account (\(s.devices) × \(s.assets) assets) | loaded in \(f(load.wall, 2)) s wall\(load.firstRequest.map { " (off the request path: the first request took \(f($0 * 1000, 1)) ms)" } ?? ""), \(f(load.cpu, 2)) s server CPU; \(f(load.indexMiB, 1)) MiB estimated (\(f(load.bytesPerObject, 0)) bytes per object), resident size +\(f(load.rssDeltaMiB, 1)) MiB | recorded |")
    print("| peak RSS < 300 MiB with all \(s.devices) libraries loaded | VmHWM \(f(peakRSS, 1)) MiB (\(f(rssAfterUpload, 1)) after the uploads; VmRSS \(f(rssNowAfterUpload, 1)) then, \(f(endRSS, 1)) at the end) | \(met(peakRSS > 0 && peakRSS < 300)) |")
}

// MARK: - Journal

func journalScenario(_ s: Settings) throws {
    let photos = PhotoSet(count: Int((Double(s.assets) * 10 / 9).rounded()))
    let libraries = (0..<2).map { DeviceLibrary(device: $0, assets: s.assets, photos: photos) }
    let account = try SimAccount(s, devices: 2)
    var uploads: [UploadResult] = []
    for d in 0..<2 {
        log("PUT /v1/library device \(d + 1)/2…")
        uploads.append(try upload(s, token: account.deviceTokens[d], library: libraries[d], photos: photos))
    }
    let d1 = account.deviceTokens[0], d2 = account.deviceTokens[1]
    let entries = 200, perEntry = 10
    // Cloud identifiers of 2000 assets spread over device 1's library.
    let step = max(1, s.assets / (entries * perEntry))
    let chosen = (0..<(entries * perEntry)).map { libraries[0].localIdentifiers[($0 * step) % s.assets] }
    var cloudIDs: [String] = []
    for start in stride(from: 0, to: chosen.count, by: 1000) {
        let body = try call(s.port, RawRequest("POST", "/v1/library/cloud-identifiers", token: d1,
                                               body: identifiersBody("localIdentifiers", chosen[start..<min(start + 1000, chosen.count)])))
        cloudIDs += try mappings(body, askedKey: "localIdentifier", foundKey: "cloudIdentifier").compactMap { $0.found }
    }
    guard cloudIDs.count == chosen.count else { throw ClientError(description: "only \(cloudIDs.count) of \(chosen.count) assets mapped") }

    let journal = try parseObject(call(s.port, RawRequest("POST", "/v1/journals", token: d1, body: Array(#"{"title":"Trip"}"#.utf8)), expect: 201))
    let journalID = try stringField(journal, "journalID")
    let entryWrites = (0..<entries).map { e in
        var w = JSONWriter(capacity: 2048)
        w.beginObject(); w.key("text"); w.string("Day \(e + 1): a walk by the sea.")
        w.key("photos"); w.beginArray()
        for p in 0..<perEntry { w.beginObject(); w.key("cloudIdentifier"); w.string(cloudIDs[e * perEntry + p]); w.endObject() }
        w.endArray(); w.endObject()
        return RawRequest("PUT", "/v1/journals/\(journalID)/entries/e\(e + 1)", token: d1, body: w.bytes)
    }
    log("journal: writing \(entries) entries × \(perEntry) photos by cloud identifier…")
    let built = try runLoad(port: s.port, clients: 1, requests: entryWrites, server: s.server)

    let reads = max(10, Int(s.seconds * 10))
    let read1 = RawRequest("GET", "/v1/journals/\(journalID)", token: d1)
    let read2 = RawRequest("GET", "/v1/journals/\(journalID)", token: d2)
    log("journal: reads on device 1 (\(reads))…")
    let r1 = try runLoad(port: s.port, clients: 1, requests: Array(repeating: read1, count: reads), server: s.server)
    log("journal: first read on device 2 (resolves by content, stores links)…")
    let firstOn2 = try runLoad(port: s.port, clients: 1, requests: [read2], server: s.server, keepBodies: true)
    var resolved = 0, unresolved = 0
    if let body = firstOn2.bodies.first, case .array(let es)? = try parseObject(body)["entries"] {
        for case .object(let e) in es {
            guard case .array(let ps)? = e["photos"] else { continue }
            for case .object(let p) in ps { if p["localIdentifier"] != nil { resolved += 1 } else { unresolved += 1 } }
        }
    }
    log("journal: reads on device 2 (\(reads))…")
    let r2 = try runLoad(port: s.port, clients: 1, requests: Array(repeating: read2, count: reads), server: s.server)
    log("journal: concurrent reads, \(s.clients) clients, \(f(s.seconds, 0))s…")
    let rc = try runLoad(port: s.port, clients: s.clients, requests: [read1, read2], duration: s.seconds, server: s.server)

    // Entries of 50 photos by local identifier on device 2: some already linked, most not yet.
    var rng = SplitMix(state: 0x50)
    let writeCount = max(10, Int(s.seconds * 10))
    let localWrites = (0..<writeCount).map { i in
        var w = JSONWriter(capacity: 4096)
        w.beginObject(); w.key("text"); w.string("Picked on device 2, #\(i + 1)")
        w.key("photos"); w.beginArray()
        var used = Set<Int>()
        while used.count < 50 { used.insert(rng.below(s.assets)) }
        for a in used.sorted() { w.beginObject(); w.key("localIdentifier"); w.string(libraries[1].localIdentifiers[a]); w.endObject() }
        w.endArray(); w.endObject()
        return RawRequest("PUT", "/v1/journals/\(journalID)/entries/w\(i + 1)", token: d2, body: w.bytes)
    }
    log("journal: \(writeCount) entries of 50 photos by local identifier on device 2…")
    let wl = try runLoad(port: s.port, clients: 1, requests: localWrites, server: s.server)

    print(markdown: "", "## Journal — \(entries) entries × \(perEntry) photos, devices of \(s.assets) assets", "")
    print("Uploads: \(uploads.map { f($0.seconds) + " s" }.joined(separator: ", ")). Device 2 holds a different random ~90% of the same photos: its first read resolved \(resolved) photos and left \(unresolved) as placeholders.")
    print(markdown: "", "| phase | requests | wall s | requests/s | p50 ms | p99 ms | server CPU per request (ms) | errors |", "|---|---:|---:|---:|---:|---:|---:|---:|")
    func row(_ name: String, _ r: LoadResult) {
        print("| \(name) | \(r.requests) | \(f(r.seconds, 1)) | \(f(r.requestsPerSecond, 0)) | \(f(r.percentile(50))) | \(f(r.percentile(99))) | \(f(r.cpuPerRequestMS)) | \(r.errors) |")
    }
    row("`PUT` entry of \(perEntry) photos by cloud identifier (building the journal), 1 client", built)
    row("`GET /v1/journals/{id}` on device 1 (photos linked there), 1 client", r1)
    row("`GET /v1/journals/{id}` first read on device 2 (resolves by content)", firstOn2)
    row("`GET /v1/journals/{id}` on device 2 afterwards, 1 client", r2)
    row("`GET /v1/journals/{id}`, both devices, \(s.clients) clients", rc)
    row("`PUT` entry of 50 photos by local identifier on device 2, 1 client", wl)
    for (name, r) in [("build", built), ("read 1", r1), ("first read 2", firstOn2), ("read 2", r2), ("concurrent", rc), ("write", wl)] {
        if let e = r.firstError { print("First error (\(name)): `\(e.prefix(200))`") }
    }
    let worstCPU = max(r1.cpuPerRequestMS, r2.cpuPerRequestMS)
    let worstP99 = max(r1.percentile(99), r2.percentile(99))
    print(markdown: "", "| target | measured | |", "|---|---|---|")
    print("| reading a 200×10 journal < 20 ms | server CPU \(f(r1.cpuPerRequestMS)) / \(f(r2.cpuPerRequestMS)) ms per read (device 1 / 2); client p50 \(f(r1.percentile(50))) / \(f(r2.percentile(50))) ms, p99 \(f(r1.percentile(99))) / \(f(r2.percentile(99))) ms | \(met(worstCPU < 20)) (server CPU), \(met(worstP99 < 20)) (client p99) |")
    print("| writing an entry of 50 photos by local identifier (latency) | p50 \(f(wl.percentile(50))) ms, p99 \(f(wl.percentile(99))) ms, server CPU \(f(wl.cpuPerRequestMS)) ms | (no number set) |")
}

/// What loading an account's mapping index cost: the first mapping request of the account, and
/// when that request handed the load to the background (a large account without a snapshot,
/// `mappingIndexInlineLoadObjects`), until the index was installed.
struct IndexLoad {
    /// The first request's wall time, when the load ran off the request path (else nil).
    var firstRequest: Double?
    var wall: Double
    var cpu: Double
    var indexMiB: Double
    var bytesPerObject: Double
    var rssDeltaMiB: Double
}

func measureIndexLoad(_ s: Settings, token: String, identifier: String, objects: Int) throws -> IndexLoad {
    let rss0 = s.server?.memoryMiB("VmRSS") ?? 0
    let cpu0 = s.server?.cpuSeconds() ?? 0
    let t0 = now()
    _ = try call(s.port, RawRequest("POST", "/v1/library/cloud-identifiers", token: token, body: identifiersBody("localIdentifiers", [identifier][...])))
    var wall = now() - t0
    func metric(_ name: String) throws -> Double {
        let metrics = String(decoding: try call(s.port, RawRequest("GET", "/metrics", token: nil)), as: UTF8.self)
        return metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }
    var firstRequest: Double?
    if try metric("concord_mapping_index_deferred_loads_total") > 0 {
        firstRequest = wall
        while try metric("concord_mapping_index_background_loads_fitted_total") < 1, now() - t0 < 300 { usleep(10_000) }
        wall = now() - t0
    }
    let cpu = (s.server?.cpuSeconds() ?? 0) - cpu0
    let rss1 = s.server?.memoryMiB("VmRSS") ?? 0
    let resident = try metric("concord_mapping_index_resident_bytes")
    log("mapping index: loaded in \(f(wall))s\(firstRequest.map { " (off the request path; the first request took \(f($0 * 1000, 1)) ms)" } ?? ""), \(f(resident / 1_048_576, 1)) MiB estimated, RSS +\(f(rss1 - rss0, 1)) MiB")
    return IndexLoad(firstRequest: firstRequest, wall: wall, cpu: cpu, indexMiB: resident / 1_048_576, bytesPerObject: resident / Double(max(1, objects)), rssDeltaMiB: rss1 - rss0)
}
