#!/usr/bin/env python3
"""A TCP proxy that adds a round trip time: every chunk read in either direction is delivered RTT/2 later.

Kernel netem is not available on these machines; this stands in for a WAN link between the tools and a server
on loopback. What it simulates: the latency of each request and response (and of TLS's handshake messages), with
the order of bytes in each direction kept. What it does not: TCP's own handshake round trip (the proxy accepts at
once and connects to the server at once), loss, and bandwidth limits.

Usage: latency_proxy.py LISTEN_PORT TARGET_PORT RTT_MS   (both on 127.0.0.1; prints "ready" once listening)
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, chunk = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if chunk is None:
                break
            writer.write(chunk)
            await writer.drain()
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass

    sender = asyncio.ensure_future(deliver())
    try:
        while True:
            chunk = await reader.read(65536)
            queue.put_nowait((loop.time() + delay, chunk or None))
            if not chunk:
                break
    except (ConnectionError, OSError):
        queue.put_nowait((loop.time(), None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def main():
    listen_port, target_port, rtt_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    delay = rtt_ms / 2000.0

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay),
            pipe(server_reader, client_writer, delay),
            return_exceptions=True,
        )
        for writer in (client_writer, server_writer):
            try:
                writer.close()
            except OSError:
                pass

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
