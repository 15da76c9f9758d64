extension TransferEngine {
    /// What a download would refuse before its first request, checked without a network: a destination that is
    /// a folder, a `--dir` that is a file, an existing file that is not this URL's own download (without
    /// `overwrite` or `continuePartial`). For a queue (`haul add`, the daemon's `tasks.add`) to refuse at once
    /// what would otherwise fail later, out of sight. Messages match the download's own.
    public static func checkDestination(_ options: DownloadOptions, home: HaulHome) throws(HaulError) {
        try checkDestination(options, records: TransferRecordStore(home: home))
    }

    /// The same check, with the records of `records` (a session's, where its tasks' records are). A download confined
    /// below a folder (a URL list's `dir=` and `out=`) has its folder reached below it without following a link (one
    /// on the way is refused now, as the download would refuse it), and its file looked up only there.
    package static func checkDestination(_ options: DownloadOptions, records: any ResumeRecords) throws(HaulError) {
        switch options.destination {
        case .standardOutput:
            return
        case .directory(let folder):
            if let root = options.confinedTo {
                try OpenDirectory.openIfPresent(folder, create: false, below: root)?.close()
            } else if POSIX.exists(folder), !POSIX.isDirectory(folder) {
                throw HaulError(.usage, "\(folder) is a file, not a folder to save into")
            }
        case .file(let path):
            try refuseUnreplaceable(path)
            if PartialFileName.isPartial(POSIX.nameOf(path)) { throw HaulError(.usage, PartialFileName.refusal(destination: path)) }
            let folder: OpenDirectory?
            if let root = options.confinedTo {
                // A folder on the way that is missing: nothing is at the destination yet.
                guard let opened = try OpenDirectory.openIfPresent(POSIX.directoryOf(path), create: false, below: root) else { return }
                folder = opened
            } else {
                folder = try? OpenDirectory.open(POSIX.directoryOf(path), create: false)
            }
            defer { folder?.close() }
            // A device, FIFO or socket is written straight through, never refused or replaced; with -nc, a taken
            // name is left alone, whatever it is.
            if StreamDownload.isStreamTarget(options.destination, in: folder) || options.noClobber { return }
            guard let found = folder?.status(POSIX.nameOf(path)) else { return }
            if found.isDirectory { throw HaulError(.usage, "\(path) is a directory", reason: .destinationIsDirectory(path: path)) }
            guard !options.overwrite, !options.timestamping else { return }
            // This URL's own earlier download of the same file (finished, or adding the same task again) is fine.
            let record = try? records.load(TransferRecord.key(destinationPath: path))
            if record?.url == options.url.absoluteString { return }
            guard options.continuePartial else {
                if !found.isRegular { throw DownloadJob.notAFile(path) }
                throw HaulError(.usage, "\(path) already exists", reason: .destinationExists(path: path))
            }
            // A file another account could change is refused at once (the download checks it again on the file it
            // opens, and says itself why it takes no link or other kind of file).
            if found.isRegular, found.size > 0, let exposure = found.exposure {
                throw HaulError(.usage, exposure.refusal(path))
            }
        }
    }
}
