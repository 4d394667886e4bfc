"""The protoc-generated classes of proto/flowsched/v1/*.proto.

Generated code is not committed. The classes are found, in this order:

1. an importable ``flowsched.v1`` package (what ``pip install`` of this
   package builds with protoc, see setup.py);
2. ``$FLOWSCHED_PROTO_GEN_DIR`` if it already holds the generated modules
   (the CMake target ``flowsched_client_protos`` writes them into the build
   directory);
3. otherwise protoc (``$FLOWSCHED_PROTOC`` or ``protoc`` on PATH) generates
   them from ``$FLOWSCHED_PROTO_DIR`` (default: the repository's ``proto/``
   next to this source tree) into ``$FLOWSCHED_PROTO_GEN_DIR`` or a cache
   directory named after the hash of the .proto files.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from pathlib import Path

from ._generate import generate, proto_files

_MODULES = ("events", "placements", "ledger", "rounds", "dead_letter")


def _default_proto_dir() -> Path:
    # clients/python/flowsched_client/protos.py -> <repo>/proto
    return Path(__file__).resolve().parents[3] / "proto"


def _has_modules(directory: Path) -> bool:
    return all((directory / "flowsched" / "v1" / f"{m}_pb2.py").exists()
               for m in _MODULES)


def _import_all():
    return [importlib.import_module(f"flowsched.v1.{m}_pb2") for m in _MODULES]


def _load():
    try:
        return _import_all()
    except ImportError:
        pass
    gen_env = os.environ.get("FLOWSCHED_PROTO_GEN_DIR")
    proto_dir = Path(os.environ.get("FLOWSCHED_PROTO_DIR") or _default_proto_dir())
    if gen_env:
        gen_dir = Path(gen_env)
        if not _has_modules(gen_dir):
            generate(proto_dir, gen_dir)
    else:
        digest = hashlib.sha256()
        for f in proto_files(proto_dir):
            digest.update(f.name.encode())
            digest.update(f.read_bytes())
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        gen_dir = cache / "flowsched_client" / digest.hexdigest()[:16]
        if not _has_modules(gen_dir):
            generate(proto_dir, gen_dir)
    sys.path.insert(0, str(gen_dir))
    for name in [n for n in sys.modules if n == "flowsched" or n.startswith("flowsched.")]:
        del sys.modules[name]  # a failed partial import must not stick
    return _import_all()


events_pb2, placements_pb2, ledger_pb2, rounds_pb2, dead_letter_pb2 = _load()

__all__ = ["events_pb2", "placements_pb2", "ledger_pb2", "rounds_pb2",
           "dead_letter_pb2", "generate"]
