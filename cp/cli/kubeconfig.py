"""`cplane kubeconfig create USER`: a kubeconfig with a client certificate signed by a secure server's CA
(docs/security.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("kubeconfig", help="write kubeconfigs for new identities (client certificates)",
                       description="Credentials for a secure `cplane serve` (docs/security.md).")
    ksub = p.add_subparsers(dest="kubeconfig_command", metavar="ACTION", required=True)
    c = ksub.add_parser("create", help="a kubeconfig with a client certificate for USER, signed by the CA",
                        description="Write a kubeconfig whose client certificate names USER (CN) and its "
                                    "groups (O). What USER may do is up to RBAC: bind roles to it.")
    c.add_argument("user", metavar="USER")
    c.add_argument("--group", action="append", default=[], metavar="G", help="a group (repeatable)")
    c.add_argument("--data-dir", type=Path, required=True, help="the server's data directory (its pki/)")
    c.add_argument("--server", default=None, metavar="URL", help="server URL (default: DIR/kubeconfig's)")
    c.add_argument("--days", type=float, default=365, help="validity in days (default 365)")
    c.add_argument("-o", "--output", default=None, metavar="FILE", help="file to write (mode 0600; default stdout)")
    c.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """`cplane kubeconfig create USER --group G`: a client certificate signed by the server's CA."""
    import base64
    import time

    from api import server
    from cp import certs
    from cp import kubeconfig as kubeconfigs

    pki = Path(args.data_dir) / "pki"
    try:
        ca_cert, ca_key = (pki / "ca.crt").read_bytes(), (pki / "ca.key").read_bytes()
    except OSError:
        print(f"cplane kubeconfig create: no CA in {pki}; start `cplane serve --data-dir {args.data_dir}` "
              "(without --insecure) once first", file=sys.stderr)
        return 1
    url = args.server
    if not url:
        try:
            url = kubeconfigs.load(Path(args.data_dir) / "kubeconfig").server
        except (OSError, ValueError):
            url = ""
    if not url or not url.startswith("https://"):
        print("cplane kubeconfig create: no https server URL; pass --server https://HOST:PORT", file=sys.stderr)
        return 1
    cert, key = certs.new_client_cert(ca_cert, ca_key, user=args.user, groups=args.group or [], now=time.time(),
                                      days=args.days)
    text = server.kubeconfig_text(server=url, ca_data=base64.b64encode(ca_cert).decode(),
                                  client_cert_data=base64.b64encode(cert).decode(),
                                  client_key_data=base64.b64encode(key).decode(), user_name=args.user)
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        import os

        out = Path(args.output)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(out, 0o600)
        print(f"wrote {out} for user {args.user!r}" + (f" in groups {', '.join(args.group)}" if args.group else ""),
              file=sys.stderr)
    return 0
