"""protoc --python_out for proto/flowsched/v1/*.proto (stdlib only: setup.py
runs it before the package's dependencies are importable)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def proto_files(proto_dir: Path) -> list[Path]:
    files = sorted((proto_dir / "flowsched" / "v1").glob("*.proto"))
    if not files:
        raise ImportError(
            f"no flowsched/v1/*.proto under {proto_dir}; set FLOWSCHED_PROTO_DIR "
            "to the repository's proto/ directory")
    return files


def generate(proto_dir: Path, out_dir: Path, protoc: str | None = None,
             force: bool = False) -> None:
    """Runs protoc --python_out on every flowsched/v1/*.proto into out_dir.

    Writes into a temporary directory next to out_dir first and renames it,
    so concurrent generators never see half-written modules. `force`
    replaces an existing out_dir (the build step, when a .proto changed).
    """
    protoc = protoc or os.environ.get("FLOWSCHED_PROTOC") or shutil.which("protoc")
    if not protoc:
        raise ImportError("protoc not found (Debian: protobuf-compiler); "
                          "set FLOWSCHED_PROTOC or install the package")
    files = proto_files(proto_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".gen-", dir=out_dir.parent))
    try:
        subprocess.run(
            [protoc, f"-I{proto_dir}", f"--python_out={tmp}",
             *[str(f.relative_to(proto_dir)) for f in files]],
            check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImportError(f"protoc failed: {e.stderr.strip()}") from e
    for pkg in (tmp / "flowsched", tmp / "flowsched" / "v1"):
        (pkg / "__init__.py").touch()
    if force and out_dir.exists():
        shutil.rmtree(out_dir)
    try:
        tmp.rename(out_dir)
    except OSError:
        # Without force an existing out_dir is kept: another process (a test
        # running in parallel) generated it meanwhile and may be importing it.
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    import sys

    if len(sys.argv) not in (3, 4):
        sys.exit("usage: _generate.py PROTO_DIR OUT_DIR [PROTOC]  (replaces OUT_DIR)")
    generate(Path(sys.argv[1]), Path(sys.argv[2]),
             sys.argv[3] if len(sys.argv) == 4 else None, force=True)
