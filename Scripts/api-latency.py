#!/usr/bin/env python3
"""Latency of the device API's calls through a running `matchcast serve`, one keep-alive client, nothing else.

Each of N devices registers, sets a push-to-start token, follows MATCH and unfollows it; the script prints the
p50 and p90 of each call (the first five devices left out: connections and caches warming up). What it measures is
the round trips a call makes to the store, not throughput: `matchcast-bench serve` measures that with 8 clients.

    swift build -c release
    .build/release/matchcast serve --port 18080 --store sqlite:/tmp/lat.sqlite --feed "fake?speed=1" &
    Scripts/api-latency.py --port 18080 --devices 300
"""
import argparse
import http.client
import json
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--devices", type=int, default=300)
    parser.add_argument("--match", default="tennis-bo3", help="a match the feed serves (default: the fake feed's tennis-bo3)")
    args = parser.parse_args()
    if args.devices <= 5:
        parser.error("--devices must be more than 5 (the first five are left out)")

    connection = http.client.HTTPConnection(args.host, args.port, timeout=30)

    def call(method, path, body=None, secret=None, expect=(200, 201, 204)):
        headers = {"content-type": "application/json"}
        if secret:
            headers["Authorization"] = "Bearer " + secret
        started = time.perf_counter()
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = connection.getresponse()
        data = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status not in expect:
            raise SystemExit(f"{method} {path}: {response.status} {data[:200]!r}")
        return elapsed, data

    latencies = {"register": [], "push-to-start token": [], "follow": [], "unfollow": []}
    for index in range(args.devices):
        elapsed, data = call("POST", "/v1/devices")
        latencies["register"].append(elapsed)
        registration = json.loads(data)
        device, secret = registration["deviceId"], registration["deviceSecret"]
        token = {"token": "%064x" % (index + 1), "environment": "sandbox"}
        latencies["push-to-start token"].append(call("PUT", f"/v1/devices/{device}/push-to-start-token", token, secret)[0])
        latencies["follow"].append(call("PUT", f"/v1/devices/{device}/follows/{args.match}", None, secret)[0])
        latencies["unfollow"].append(call("DELETE", f"/v1/devices/{device}/follows/{args.match}", None, secret)[0])

    for name, values in latencies.items():
        kept = sorted(values[5:])
        p90 = kept[min(len(kept) - 1, int(len(kept) * 0.9))]
        print(f"{name:20s} p50 {statistics.median(kept):6.2f} ms   p90 {p90:6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
