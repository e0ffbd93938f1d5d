"""A fast messaging webhook on 127.0.0.1 for the statements benchmark (asyncio, HTTP/1.1
keep-alive), run in its own process so that it uses the other core, not the sender's.

    python bench/loopback_webhook.py PORT_FILE

Writes its port to PORT_FILE; on SIGTERM prints "delivered N unique M" (M distinct
Idempotency-Keys) and exits. Bounded: it stops by itself after 10 minutes.
"""

import asyncio
import json
import signal
import sys


async def main(port_file):
    keys = set()
    count = [0]
    stop = asyncio.Event()

    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                if length:
                    await reader.readexactly(length)
                key = headers.get("idempotency-key", "")
                if method == "POST":
                    count[0] += 1
                    keys.add(key)
                    body = json.dumps({"message_id": "m-" + key}).encode()
                    status = "201 Created"
                else:
                    body, status = b'{"error": "no such message"}', "404 Not Found"
                writer.write(
                    f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    with open(port_file, "w") as fh:
        fh.write(str(server.sockets[0].getsockname()[1]))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), timeout=600)
    except TimeoutError:
        pass
    server.close()
    print(f"delivered {count[0]} unique {len(keys)}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
