import ArgumentParser
import Foundation
import HaulKit
import HaulWeb

/// `haul web`: the web dashboard's one-time login link (the daemon starts its listener if needed).
struct WebCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Print a one-time login link to the daemon's web dashboard (starting it if needed).",
        discussion: """
            The link logs one browser tab in and is then spent (it expires after 5 minutes); run `haul web` again for \
            another. --open opens it in your browser without putting it on a command line (which every local user \
            can read): do not run `xdg-open "$(haul web)"`. The dashboard listens on 127.0.0.1 (port 7711, or the \
            next free one) unless the daemon was started with --web. Scripts use the API key instead: \
            `Authorization: Bearer KEY` on POST /api/rpc (docs/web.md).

            """ + HelpText.examples(
                "haul web --open              # log in, in your browser",
                "haul web                     # paste the printed address into a browser",
                "haul web --port 8080",
                "haul web --api-key           # for scripts; kept in $HAUL_HOME/web/api-key"
            ))

    @Option(help: "The address to listen on when the dashboard is not running yet (default 127.0.0.1).")
    var host: String?

    @Option(parsing: .unconditional, help: "The port to listen on when the dashboard is not running yet (default 7711 or the next free one).")
    var port: Int?

    @Flag(name: .customLong("api-key"), help: "Print the API key for scripts (created on first use) instead of a login link.")
    var apiKey = false

    @Flag(help: "Open the login link in your browser ($BROWSER, else xdg-open or open) through a private file, never on a command line, instead of printing it.")
    var open = false

    @Option(help: "The daemon's control socket (default: $HAUL_SOCKET, else $XDG_RUNTIME_DIR/haul/daemon.sock, else $HAUL_HOME/run/daemon.sock).")
    var socket: String?

    @Flag(name: .customLong("no-autostart"), help: "Fail instead of starting a daemon when none is running.")
    var noAutostart = false

    func validate() throws {
        if let port, !(1...65_535).contains(port) { throw InputError("--port must be between 1 and 65535") }
        if open, apiKey { throw InputError("--open and --api-key do not go together: the API key is for scripts") }
    }

    func run() async throws {
        if apiKey {
            do {
                let key = try WebSecrets.apiKeyCreatingIfNeeded(home: HaulHome(environment: ProcessInfo.processInfo.environment))
                print(key)
                return
            } catch {
                throw CLIFailure.exit(error)
            }
        }
        var options = DaemonClientOptions()
        options.socket = socket
        options.noAutostart = noAutostart
        options.session = "default"
        do {
            let connection = try await options.connect()
            let answer: StartWeb.Result
            do {
                answer = try await connection.client.call(StartWeb.self, .init(host: host, port: port))
            } catch is GarbledAnswer {
                throw HaulError(.server, "the daemon did not answer with a login link; update haul and restart the daemon")
            }
            await connection.close()
            if open {
                try await openInBrowser(answer)
            } else {
                print(answer.login)
            }
        } catch let error as RPCError where error.code == -32601 {
            throw CLIFailure.exit(HaulError(.usage, "the running haul daemon has no web dashboard; stop it (`haul daemon stop`) and run `haul web` again"))
        } catch {
            throw CLIFailure.exit(error)
        }
    }

    /// Writes the private login page and starts the browser on its `file://` address: the login link is in the file
    /// only (WebLoginPage), and the browser's command line shows nothing another user could spend.
    private func openInBrowser(_ answer: StartWeb.Result) async throws {
        let environment = ProcessInfo.processInfo.environment
        let path = try WebLoginPage.save(link: answer.login, home: HaulHome(environment: environment))
        let address = URL(fileURLWithPath: path).absoluteString
        guard await WebBrowser.open(address, environment: environment) else {
            WebLoginPage.remove(token: WebLoginPage.token(ofLink: answer.login) ?? "", home: HaulHome(environment: environment))
            throw HaulError(.usage, "no browser could be opened (set BROWSER, or install xdg-utils); run `haul web` and paste the link it prints into a browser")
        }
        Reporter.printError("haul: opened the dashboard \(answer.url) in your browser")
    }
}
