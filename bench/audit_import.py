"""Audit import benchmark (issue #25): `cplane log import --audit` of a 1,000,000-event kube-apiserver
audit log (target: >= 50,000 audit events/s).

    .venv/bin/python -m bench.audit_import            # 1,000,000 audit events (~1.2 GB of scratch)
    .venv/bin/python -m bench.audit_import --quick    # 100,000
    options: --events N, --no-worker (read in the importing process, not in a worker), --dir DIR (scratch; default a temporary directory), --command (run the
             `cplane` command in a new process instead of in this one)

The log: audit.k8s.io/v1 Events at RequestResponse level, as a kube-apiserver with a RequestResponse
policy for writes writes them, in four files (three rotated, `audit-<time>.log`, and `audit.log`):
creates, updates and patches of pods (and their status), ResourceClaims (and their status) and
ConfigMaps, deletes of each, with 5% Metadata-level reads (get, list, watch) between them. The
import goes into an empty data dir. Figures: audit events read per second (the target's), log events
written per second, and the peak RSS of the importing process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

TARGET = 50_000
FILES = 4
LIVE = 3000  # objects alive at once (per kind)


def _stamp(t: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
    return f"{whole}.{int((t % 1) * 1e6):06d}Z"


def _pod(name: str, uid: str, n: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid, "resourceVersion": str(n),
                         "creationTimestamp": "2026-12-01T10:00:00Z",
                         "annotations": {"example.com/step": str(n)}, "labels": {"app": "trainer", "rev": str(n % 7)},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "trainer-7c9f",
                                              "uid": "6f1c2d9e-0000-4000-8000-000000000001", "controller": True}]},
            "spec": {"containers": [{"name": "main", "image": "registry.example/trainer:1.4",
                                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                   "claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
                     "schedulerName": "default-scheduler", "restartPolicy": "Always",
                     "nodeName": f"node-{n % 50}" if n % 3 else ""},
            "status": {"phase": "Running" if n % 3 else "Pending", "qosClass": "Burstable"}}


def _claim(name: str, uid: str, n: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid, "resourceVersion": str(n),
                         "creationTimestamp": "2026-12-01T10:00:00Z",
                         "annotations": {"example.com/step": str(n)}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                                           "allocationMode": "ExactCount",
                                                                           "count": 1}}]}},
            "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                                                "pool": f"node-{n % 50}", "device": f"gpu-{n % 8}"}]}}}
            if n % 2 else {}}


def _configmap(name: str, uid: str, n: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid, "resourceVersion": str(n),
                         "creationTimestamp": "2026-12-01T10:00:00Z"},
            "data": {"config.yaml": f"replicas: {n % 9}\nmode: train\n", "version": str(n)}}


KINDS = (("", "v1", "pods", _pod, "status"), ("resource.k8s.io", "v1", "resourceclaims", _claim, "status"),
         ("", "v1", "configmaps", _configmap, ""))


def audit_events(count: int, *, seed: int = 25) -> Iterator[dict[str, Any]]:
    """`count` audit events (see the module), in time order."""
    rnd = random.Random(seed)
    t = 1_796_119_200.0  # 2026-12-01T10:00:00Z
    live: list[dict[str, tuple[str, int]]] = [{} for _ in KINDS]
    serial = 0
    for n in range(count):
        t += 0.0005
        serial += 1
        base: dict[str, Any] = {"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": str(uuid.UUID(int=n)),
                                "stage": "ResponseComplete", "sourceIPs": ["10.0.0.7"],
                                "requestReceivedTimestamp": _stamp(t - 0.002), "stageTimestamp": _stamp(t)}
        group, version, plural, make, sub = KINDS[n % 3]
        names = live[n % 3]
        ref: dict[str, Any] = {"resource": plural, "namespace": "team-a", "apiVersion": version}
        if group:
            ref["apiGroup"] = group
        if rnd.random() < 0.05:
            yield {**base, "level": "Metadata", "verb": rnd.choice(("get", "list", "watch")),
                   "requestURI": f"/api/v1/namespaces/team-a/{plural}", "objectRef": ref,
                   "user": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
                   "userAgent": "kube-controller-manager/v1.37.0", "responseStatus": {"metadata": {}, "code": 200}}
            continue
        roll = rnd.random()
        user = {"username": "system:serviceaccount:team-a:trainer-operator", "groups": ["system:authenticated"]}
        agent = "trainer-operator/0.9 (linux/amd64)"
        if len(names) < LIVE // 2 or (roll < 0.3 and len(names) < LIVE):
            name = f"{plural[:-1]}-{serial}"
            uid = str(uuid.UUID(int=serial + (1 << 64)))
            obj = make(name, uid, serial)
            names[name] = (uid, serial)
            request = {**obj, "metadata": {k: v for k, v in obj["metadata"].items()
                                           if k not in ("uid", "resourceVersion", "creationTimestamp")}}
            yield {**base, "level": "RequestResponse", "verb": "create", "objectRef": {**ref, "name": name},
                   "requestURI": f"/api/v1/namespaces/team-a/{plural}?fieldManager=trainer-operator",
                   "user": user, "userAgent": agent, "responseStatus": {"metadata": {}, "code": 201},
                   "requestObject": request, "responseObject": obj}
            continue
        name = next(iter(names))  # the least recently written
        uid, _ = names.pop(name)
        if roll < 0.45:
            yield {**base, "level": "RequestResponse", "verb": "delete",
                   "objectRef": {**ref, "name": name}, "requestURI": f"/api/v1/namespaces/team-a/{plural}/{name}",
                   "user": user, "userAgent": agent, "responseStatus": {"metadata": {}, "code": 200},
                   "requestObject": {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal",
                                     "propagationPolicy": "Background"},
                   "responseObject": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "details": {"name": name, "kind": plural, "uid": uid}}}
            continue
        names[name] = (uid, serial)
        obj = make(name, uid, serial)
        verb, subresource = ("update", sub) if roll < 0.75 and sub else ("patch", "")
        ref = {**ref, "name": name, "uid": uid}
        if subresource:
            ref["subresource"] = subresource
        request: dict[str, Any] = obj if verb == "update" else {"metadata": {"labels": {"rev": str(serial % 7)}}}
        yield {**base, "level": "RequestResponse", "verb": verb, "objectRef": ref,
               "requestURI": f"/api/v1/namespaces/team-a/{plural}/{name}" + (f"/{subresource}" if subresource else ""),
               "user": {"username": "system:node:node-3"} if subresource else user,
               "userAgent": "kubelet/v1.37.0 (linux/amd64)" if subresource else agent,
               "responseStatus": {"metadata": {}, "code": 200}, "requestObject": request, "responseObject": obj}


def write_log(directory: Path, count: int) -> list[Path]:
    """The audit log of `count` events in `FILES` files (the rotated ones first)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"audit-2026-12-01T1{i}-00-00.000.log" for i in range(FILES - 1)] + [directory / "audit.log"]
    per = -(-count // FILES)
    encoder = msgspec.json.Encoder()
    events = audit_events(count)
    for path in paths:
        with path.open("wb") as f:
            buf = bytearray()
            for _, ev in zip(range(per), events, strict=False):
                encoder.encode_into(ev, buf, len(buf))
                buf += b"\n"
                if len(buf) > 1 << 20:
                    f.write(buf)
                    buf.clear()
            f.write(buf)
    return paths


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its finished children (the worker)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--events", type=int)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--command", action="store_true")
    parser.add_argument("--no-worker", action="store_true",
                        help="read in the importing process, whatever the input's size (a reference)")
    args = parser.parse_args()
    count = args.events or (100_000 if args.quick else 1_000_000)
    with contextlib.ExitStack() as stack:
        scratch = args.dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="audit-bench-")))
        logs = scratch / f"audit-{count}"
        if not (logs / "audit.log").exists():
            started = time.perf_counter()
            write_log(logs, count)
            print(f"wrote {count:,} audit events ({sum(p.stat().st_size for p in logs.iterdir()) / 1e6:,.0f} MB) "
                  f"in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        paths = sorted(logs.iterdir())
        data = scratch / f"data-{os.getpid()}"
        argv = ["log", "import", "--audit", *map(str, paths), "--data-dir", str(data)]
        started = time.perf_counter()
        if args.command:
            proc = subprocess.run([sys.executable, "-c", "import resource, sys\nfrom cp import cli\n"
                                   "code = cli.main(sys.argv[1:])\n"
                                   "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr)\n"
                                   "sys.exit(code)", *argv], capture_output=True, text=True, check=False)
            elapsed = time.perf_counter() - started
            sys.stderr.write(proc.stderr)
            if proc.returncode:
                return proc.returncode
            rss = float(proc.stderr.strip().splitlines()[-1])
        else:
            from cp import cli
            from cp.cli import log_audit

            if args.no_worker:
                log_audit.WORKER_BYTES = 1 << 62
            before = _cpu()
            code = cli.main(argv)
            elapsed = time.perf_counter() - started
            cpu = tuple(b - a for a, b in zip(before, _cpu(), strict=True))
            if code:
                return int(code)
            rss = _rss_mb()
            worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        written = asyncio.run(_revision(data))
        shutil.rmtree(data)  # ~1 GB a run; the generated log is kept in --dir for the next run
    rate = count / elapsed
    if args.command:
        cpu, worker_rss = (0.0, 0.0), 0.0
    else:
        print(f"CPU time: importing process {cpu[0]:.1f} s, worker {cpu[1]:.1f} s "
              f"(the busier one bounds an uncontended run: {count / max(cpu):,.0f} audit events/s)")
    print(f"audit import: {count:,} audit events in {elapsed:.1f} s: {rate:,.0f} audit events/s "
          f"(target >= {TARGET:,}: {'met' if rate >= TARGET else 'NOT met'}); {written:,} log events written "
          f"({written / elapsed:,.0f}/s); peak RSS {rss:,.0f} MB ({'a new process' if args.command else 'in process'}"
          f"{f', worker {worker_rss:,.0f} MB' if not args.command and cpu[1] else ''})")
    return 0


async def _revision(data: Path) -> int:
    from storage import factory

    log = factory.open_event_log(url=f"sqlite+aiosqlite:///{(data / 'cplane.db').resolve()}")
    await log.start()
    try:
        return log.revision
    finally:
        await log.close()


if __name__ == "__main__":
    sys.exit(main())
