import Foundation

/// The memory this process may use, for defaults sized by the machine: the cgroup's limit when
/// one is set (a container's: v2 `memory.max`, v1 `memory.limit_in_bytes`), else the machine's
/// (`MemTotal`), whichever is smaller.
enum MemoryLimit {
    /// Bytes, nil when none of the files can be read (not Linux).
    static func bytes(root: String = "") -> Int? {
        var limits: [Int] = []
        for file in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
            // "max" (v2) or a huge number (v1) mean no limit.
            if let text = try? String(contentsOfFile: root + file, encoding: .utf8),
               let n = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), n > 0, n < 1 << 50 {
                limits.append(n)
            }
        }
        if let text = try? String(contentsOfFile: root + "/proc/meminfo", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("MemTotal:") }),
           let kib = Int(line.split(separator: " ").dropFirst().first ?? "") {
            limits.append(kib * 1024)
        }
        return limits.min()
    }

    /// `defaultIndexMegabytes()` for this process, read once: every `Configuration()` starts from it.
    static let indexMegabytes = MemoryLimit.defaultIndexMegabytes(memoryBytes: MemoryLimit.bytes())

    /// The mapping index's default budget (`mappingIndexMegabytes`): a quarter of the memory this
    /// process may use, at least 64 MiB; 256 MiB when the memory cannot be read.
    static func defaultIndexMegabytes(memoryBytes: Int?) -> Int {
        guard let memoryBytes else { return 256 }
        return max(64, (memoryBytes / 4) >> 20)
    }
}
