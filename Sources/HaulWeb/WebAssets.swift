import Foundation

/// The dashboard's page, embedded in the binary by SwiftPM (Package.swift embeds the whole `Assets` folder with
/// `.embedInCode`): no file next to the executable, no CDN, no build step.
///
/// ``all`` is the one list of the page's files: the routes serve what it holds (``WebAccess/route(method:path:assets:)``
/// is given ``paths``), each entry names its embedded bytes (a file that is not there does not build), and the tests
/// read it (every file of the folder is listed and served as it is, every module a script imports is listed).
package enum WebAssets {
    /// One static file of the page: where it is served, its bytes and its `Content-Type`.
    package struct Asset: Sendable {
        /// The file's name in `Sources/HaulWeb/Assets` (it is served at `/` + name).
        package let name: String
        package let bytes: [UInt8]
        package let contentType: String

        /// The path it is served at.
        package var path: String { "/" + name }
    }

    static let html = "text/html; charset=utf-8"
    static let css = "text/css; charset=utf-8"
    /// ES modules as well as classic scripts (RFC 9239); a module of another type is refused by the browser.
    static let javascript = "text/javascript; charset=utf-8"

    /// Every file of the page. The modules are loaded by `<script type="module" src="/app.mjs">` and its imports,
    /// all from this origin, as `script-src 'self'` allows.
    package static let all: [Asset] = [
        Asset(name: "index.html", bytes: PackageResources.index_html, contentType: html),
        Asset(name: "app.css", bytes: PackageResources.app_css, contentType: css),
        // The entry module, and the parts of the page it imports.
        Asset(name: "app.mjs", bytes: PackageResources.app_mjs, contentType: javascript),
        Asset(name: "page.mjs", bytes: PackageResources.page_mjs, contentType: javascript),
        Asset(name: "api.mjs", bytes: PackageResources.api_mjs, contentType: javascript),
        Asset(name: "eventStream.mjs", bytes: PackageResources.eventStream_mjs, contentType: javascript),
        Asset(name: "taskList.mjs", bytes: PackageResources.taskList_mjs, contentType: javascript),
        Asset(name: "detail.mjs", bytes: PackageResources.detail_mjs, contentType: javascript),
        Asset(name: "dialogs.mjs", bytes: PackageResources.dialogs_mjs, contentType: javascript),
        Asset(name: "charts.mjs", bytes: PackageResources.charts_mjs, contentType: javascript),
        // Pure: no DOM, unit-tested with `node --test` (Tests/web).
        Asset(name: "model.mjs", bytes: PackageResources.model_mjs, contentType: javascript),
        Asset(name: "format.mjs", bytes: PackageResources.format_mjs, contentType: javascript),
        Asset(name: "geometry.mjs", bytes: PackageResources.geometry_mjs, contentType: javascript),
        Asset(name: "addForm.mjs", bytes: PackageResources.addForm_mjs, contentType: javascript),
    ]

    /// The page itself, also served at `/`.
    static let indexPath = "/index.html"

    private static let byPath: [String: Asset] = {
        var assets: [String: Asset] = [:]
        for asset in all { assets[asset.path] = asset }
        assets["/"] = assets[indexPath]
        return assets
    }()

    /// The paths the page's files are served at (`/` included): what ``WebAccess/route(method:path:assets:)`` takes.
    package static let paths = Set(byPath.keys)

    /// Whether the file at `path` is a script (a classic script or an ES module).
    package static func isScript(_ path: String) -> Bool {
        asset(at: path)?.contentType == javascript
    }

    /// The asset served at `path`, or nil.
    package static func asset(at path: String) -> Asset? {
        byPath[path]
    }
}
