#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Transparent huge pages for malloc's large blocks, which hold the mapping index: opt in with
/// `CONCORD_MALLOC_HUGE_PAGES=1`.
///
/// The index of a million-photo library is a few hundred megabytes of arrays read at random. On
/// 4 KiB pages nearly every lookup also misses the TLB; on 2 MiB pages almost none do. glibc (2.35
/// and later) backs its large blocks with huge pages only when told at the process's start
/// (`GLIBC_TUNABLES` with `glibc.malloc.hugetlb=1`), and a kernel whose THP mode is `madvise` (the
/// usual default) gives them only to memory so advised. So, asked to, `concord serve` starts itself
/// again, once, with that tunable added, the way a launcher sets its runtime's options.
/// Not the default: warm lookups and first mappings cost 10–15 % less CPU at a million, but the
/// first writes after an index load, which touch its spare room for the first time, took up to
/// several times longer in some runs (a huge page's fault, with the kernel's compaction behind it,
/// instead of a small one's), and a second instance's catch-up is latency a device waits for.
/// Nothing happens with THP off or `always`, an older glibc, or the tunable set already by
/// whoever started the process.
public enum HugePageMalloc {
    static let tunable = "glibc.malloc.hugetlb=1"
    static let optIn = "CONCORD_MALLOC_HUGE_PAGES"

    /// The environment to start again with, or nil to keep running as started.
    /// - Parameters:
    ///   - thpMode: `/sys/kernel/mm/transparent_hugepage/enabled`, e.g. `always [madvise] never`.
    ///   - glibc: glibc's version, e.g. `2.36`.
    static func environmentToRestart(_ environment: [String: String], thpMode: String?, glibc: String?) -> [String: String]? {
        guard environment[Self.optIn] == "1", thpMode?.contains("[madvise]") == true else { return nil }
        guard let glibc, Self.supportsTunable(glibc) else { return nil }
        let current = environment["GLIBC_TUNABLES"] ?? ""
        guard !current.contains("glibc.malloc.hugetlb") else { return nil }
        var restarted = environment
        restarted["GLIBC_TUNABLES"] = current.isEmpty ? Self.tunable : current + ":" + Self.tunable
        return restarted
    }

    /// glibc 2.35 added `glibc.malloc.hugetlb`.
    static func supportsTunable(_ version: String) -> Bool {
        let parts = version.split(separator: ".").compactMap { Int($0) }
        guard parts.count >= 2 else { return false }
        return parts[0] > 2 || (parts[0] == 2 && parts[1] >= 35)
    }

    /// "2.36", from `confstr`'s "glibc 2.36"; nil when not glibc.
    static func glibcVersion() -> String? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: 64)
        guard confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count) > 0 else { return nil }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard text.hasPrefix("glibc ") else { return nil }
        return String(text.dropFirst("glibc ".count))
        #else
        return nil
        #endif
    }

    /// Replaces the process by the same executable with the same arguments and the tunable added,
    /// when that helps; returns (and the process goes on as started) otherwise or if it fails.
    public static func restartIfUseful(arguments: [String], environment: [String: String]) {
        #if os(Linux)
        let mode = try? String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled", encoding: .utf8)
        guard let restarted = Self.environmentToRestart(environment, thpMode: mode, glibc: Self.glibcVersion()) else { return }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = restarted.map { strdup("\($0.key)=\($0.value)") } + [nil]
        execve("/proc/self/exe", argv, envp)
        // Only reached when execve failed (no /proc, say): run as started.
        argv.forEach { free($0) }
        envp.forEach { free($0) }
        #endif
    }
}
