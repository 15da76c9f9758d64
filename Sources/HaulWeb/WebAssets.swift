import Foundation

/// The dashboard's page, embedded in the binary by SwiftPM (`resources: [.embedInCode(…)]`): no file next to the
/// executable, no CDN, no build step.
package enum WebAssets {
    /// One static answer: its bytes and its `Content-Type`.
    package struct Asset: Sendable {
        package let bytes: [UInt8]
        package let contentType: String
    }

    /// The asset served at `path` (`/`, `/index.html`, `/app.js`, `/app.css`), or nil.
    package static func asset(at path: String) -> Asset? {
        switch path {
        case "/", "/index.html": Asset(bytes: PackageResources.index_html, contentType: "text/html; charset=utf-8")
        case "/app.js": Asset(bytes: PackageResources.app_js, contentType: "text/javascript; charset=utf-8")
        case "/app.css": Asset(bytes: PackageResources.app_css, contentType: "text/css; charset=utf-8")
        default: nil
        }
    }
}
