import ConcordBytes
import ConcordDomain

/// Fingerprints on demand: a device's wanted list and counts, cached per mapping version.
extension AccountMappingIndex {
    // MARK: - Fingerprints on demand

    /// The wanted candidates of a device, by one pass over the account's records in memory: a
    /// record with a fingerprint, no link on the device, a link on another, and no key the device's
    /// objects carry; with its linked objects' creation seconds.
    func wantedCandidates(_ device: DeviceTable) -> WantedCandidates {
        // Local copies (copy-on-write references): plain array reads in the loop, no class access each.
        let records = self.records, slices = self.fingerprintSlices
        let mine = device.linksByRecord
        let others = self.devices.values.filter { $0 !== device }.map { (links: $0.linksByRecord, slots: $0.objectSlots) }
        var undated = [false, false, false], any = [false, false, false]
        var seconds: [[Int64]] = [[], [], []]
        for n in records.indices {
            let r = records[n]
            guard slices[Int(r.fingerprint)].length > 0, n >= mine.count || mine[n] < 0 else { continue }
            var linkedElsewhere = false
            for other in others where n < other.links.count && other.links[n] >= 0 { linkedElsewhere = true; break }
            guard linkedElsewhere else { continue }
            if r.key != Self.noKey {
                if device.hasKey(r.key) { continue }
                if let more = self.moreRecordKeys[UInt32(n)], more.contains(where: { device.hasKey($0) }) { continue }
            }
            let t = r.type.partOrder
            any[t] = true
            var dated = false
            for other in others where n < other.links.count && other.links[n] >= 0 {
                let second = other.slots[Int(other.links[n])].creationSecond
                if second != Int64.min { seconds[t].append(second); dated = true }
            }
            if !dated { undated[t] = true }
        }
        var candidates = WantedCandidates()
        for type in ObjectType.allCases where any[type.partOrder] {
            candidates.types.insert(type)
            if undated[type.partOrder] { candidates.undated.insert(type) } else { candidates.seconds[type] = Set(seconds[type.partOrder]) }
        }
        return candidates
    }

    /// A device's wanted list and counts as of one mapping version: computed by the first read
    /// after a mapping write of the account, so paging through the list and polling the counts
    /// cost a binary search each, not a pass over the account (docs/api-notes.md). Every mapping
    /// write moves the version on — a record taking a fingerprint or a key included, which can
    /// end another device's objects being wanted for their link — so no answer outlives what it
    /// was computed from.
    struct DeviceAnswers {
        var version: Int64
        /// The wanted objects' slots, in local identifier byte order.
        var wanted: [Int32]
        var status: LibraryStatus
    }

    /// The device's answers at this index's version (computed now when the version moved on).
    func answers(_ deviceID: String, _ device: DeviceTable) -> DeviceAnswers {
        if let cached = self.deviceAnswers[deviceID], cached.version == self.version { return cached }
        var status = LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0)
        var unknown: [Int32] = []   // no fingerprint, no link: what could be wanted
        var wanted: [Int32] = []
        let records = self.records   // a local copy (copy-on-write reference): plain reads in the loop
        for (n, o) in device.objectSlots.enumerated() where o.live {
            status.objects += 1
            let hasFingerprint = !self.isEmpty(fingerprint: o.fingerprint)
            if hasFingerprint { status.withFingerprint += 1 }
            if o.key != Self.noKey { status.withKey += 1 }
            if o.hasLink {
                status.linked += 1
                // Linked to a record with neither fingerprint nor key (an orphan link has no record):
                // wanted for its link. A record without keys has `noKey` as its first.
                if !hasFingerprint, o.record >= 0,
                   WantedCandidates.wantedForItsLink(objectHasKey: o.key != Self.noKey,
                                                     recordHasFingerprint: !self.isEmpty(fingerprint: records[Int(o.record)].fingerprint),
                                                     recordHasKey: records[Int(o.record)].key != Self.noKey) {
                    wanted.append(Int32(n))
                }
            } else if !hasFingerprint { unknown.append(Int32(n)) }
        }
        if !unknown.isEmpty {
            let candidates = self.wantedCandidates(device)
            let slots = device.objectSlots
            for n in unknown {
                let o = slots[Int(n)]
                if candidates.wants(type: o.type, creationSecond: o.creationSecond == Int64.min ? nil : o.creationSecond) { wanted.append(n) }
            }
        }
        device.sortByIdentifier(&wanted)
        status.wanted = wanted.count
        let answers = DeviceAnswers(version: self.version, wanted: wanted, status: status)
        self.deviceAnswers[deviceID] = answers
        return answers
    }

    func wantedPage(_ deviceID: String, after: String?, limit: Int) -> WantedPage {
        guard let device = self.devices[deviceID] else { return WantedPage(objects: [], next: nil, total: 0) }
        let answers = self.answers(deviceID, device)
        let list = answers.wanted
        // The first wanted object strictly after `after`, by binary search over the sorted slots.
        var low = 0, high = list.count
        if let after {
            while low < high {
                let mid = (low + high) / 2
                if after.utf8.lexicographicallyPrecedes(device.identifier(ofSlot: list[mid]).utf8) { high = mid } else { low = mid + 1 }
            }
        }
        let end = min(list.count, low + limit)
        let objects = list[low..<end].map { n in
            WantedObject(localIdentifier: device.identifier(ofSlot: n), type: device.objectSlots[Int(n)].type)
        }
        return WantedPage(objects: objects, next: end < list.count ? objects.last?.localIdentifier : nil, total: list.count)
    }

    func libraryStatus(_ deviceID: String) -> LibraryStatus {
        guard let device = self.devices[deviceID] else { return LibraryStatus(objects: 0, withFingerprint: 0, withKey: 0, linked: 0, wanted: 0) }
        return self.answers(deviceID, device).status
    }
}
