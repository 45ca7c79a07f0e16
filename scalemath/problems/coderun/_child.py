"""The sandbox's child: run one submitted Python file under limits, then report through files in its scratch folder.

Started by :mod:`.sandbox` as ``python -I _child.py <scratch>`` in a fresh session, cwd the scratch folder, with a
minimal environment. It imports only the standard library, numpy and (for a shard_map or layout task) jax, never
scalemath, and it is the last code that runs before the submission. In order:

1. a network namespace of its own (``unshare(CLONE_NEWNET)``, where the kernel allows it): no interface but an
   unconfigured loopback, so no connection can leave;
2. numpy and jax imported, the mesh built and one program compiled (their files are read and their threads
   started while nothing is limited);
3. resource limits: CPU seconds, address space (what is in use plus the task's budget), file size, open files,
   processes (``RLIMIT_NPROC``; the kernel does not apply it to root, so forks are also refused below);
4. the walls against native code where the kernel offers them: a seccomp filter (x86-64: no fork, exec, socket
   or ptrace, on every thread) and a Landlock ruleset (files created, written or removed only beneath the scratch
   folder);
5. an audit hook (``sys.addaudithook``) that ends the process with :data:`FORBIDDEN` on: sockets, new
   processes (fork, exec, spawn, subprocess, system), signals to other processes, ctypes and other foreign
   calls, importing scalemath (the grader and its answer keys) or a module that starts processes, opening a
   file for writing, creating, renaming or removing anything outside the scratch folder, reading outside the
   scratch folder and Python's own installation, changing directory, and creating more than
   :data:`MAX_FILES` files. The violation is written to ``violation.txt`` through a file opened beforehand,
   and the process ends at once (``os._exit``), so a submission cannot catch it.

Then the submission is executed as a module, its function run (under ``jax.shard_map`` on the task's mesh, or
on plain numpy arrays, or for a layout task called for its layout, which :mod:`._child_layout` checks and jits
the task's fixed block with: a broken rule reports status ``layout`` with its one line), and ``output.npy``
(``allow_pickle=False``), ``hlo.txt`` and ``result.json`` written.
Exit codes: 0 finished (result.json says ok or error), :data:`FORBIDDEN`, :data:`NO_MEMORY`; a signal
(SIGXCPU, SIGKILL) means a limit ended it.
"""

import json
import os
import resource
import signal
import sys
import traceback

FORBIDDEN = 87
NO_MEMORY = 86
MAX_FILES = 32
LAYOUT_FILE = "_child_layout.py"
LAYOUT_ERROR = None  # the layout task's error class, once its file is read
CLONE_NEWNET = 0x40000000
#: audit events refused outright, by prefix, with what a student reads
REFUSED = (
    ("socket.", "opened or used a network socket"),
    ("subprocess.", "started a subprocess"), ("os.system", "ran a shell command (os.system)"),
    ("os.fork", "forked a process (os.fork)"), ("os.forkpty", "forked a process (os.forkpty)"),
    ("os.exec", "replaced the process (os.exec*)"), ("os.posix_spawn", "spawned a process (os.posix_spawn)"),
    ("os.spawn", "spawned a process (os.spawn*)"), ("pty.spawn", "spawned a process (pty.spawn)"),
    ("os.kill", "sent a signal (os.kill)"), ("os.killpg", "sent a signal (os.killpg)"),
    ("signal.pthread_kill", "sent a signal"), ("ctypes.", "called foreign code through ctypes"),
    ("os.chdir", "changed the working directory"), ("os.chroot", "changed the root directory"),
    ("resource.setrlimit", "changed a resource limit"), ("resource.prlimit", "changed a resource limit"),
    ("os.setuid", "changed user"), ("sys.remote_exec", "ran code in another process"),
    ("webbrowser.open", "opened a browser"), ("urllib.Request", "opened a URL"), ("ftplib.", "used FTP"),
    ("smtplib.", "used SMTP"), ("http.client.", "used HTTP"), ("os.startfile", "started a program"),
    ("_posixsubprocess", "started a subprocess"),
)
#: modules a submission may not import (the grader itself; ways to start processes or call C)
NO_IMPORT = ("scalemath", "_posixsubprocess", "subprocess", "multiprocessing", "ctypes", "_ctypes", "cffi",
             "pty", "socket", "_socket", "ssl", "concurrent.futures.process", "asyncio.subprocess")
#: events whose arguments name paths that must lie inside the scratch folder (argument positions)
PATH_EVENTS = {"os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.replace": (0, 1),
               "os.symlink": (0, 1), "os.link": (0, 1), "os.chmod": (0,), "os.chown": (0,), "os.truncate": (0,),
               "os.utime": (0,), "os.chflags": (0,), "os.lchflags": (0,), "os.mkfifo": (0,), "os.mknod": (0,),
               "os.setxattr": (0,), "os.removexattr": (0,), "shutil.rmtree": (0,), "shutil.copyfile": (1,),
               "shutil.move": (1,)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _inside(path, roots):
    if isinstance(path, int) or path is None:
        return True  # an open descriptor: it was allowed when it was opened
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _install_hook(scratch, report_fd, read_roots):
    state = {"created": 0}

    def stop(what):
        text = f"forbidden operation: the submission {what}"
        try:
            os.write(report_fd, text.encode("utf-8", "replace")[:2000])
        finally:
            os._exit(FORBIDDEN)

    def hook(event, args):
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writes:
                if not _inside(path, [scratch]):
                    stop(f"opened {os.fsdecode(path)!r} for writing, outside its scratch folder")
                state["created"] += 1
                if state["created"] > MAX_FILES:
                    stop(f"opened more than {MAX_FILES} files for writing")
            elif not _inside(path, read_roots):
                stop(f"read {os.fsdecode(path)!r}, outside its scratch folder and Python's own files")
            return
        if event == "import":
            name = args[0] if args else ""
            if any(name == m or name.startswith(m + ".") for m in NO_IMPORT):
                stop(f"imported {name!r}, which submissions may not use")
            return
        if event in PATH_EVENTS:
            for i in PATH_EVENTS[event]:
                if i < len(args) and not _inside(args[i], [scratch]):
                    stop(f"touched {os.fsdecode(args[i])!r} ({event}), outside its scratch folder")
            return
        for prefix, what in REFUSED:
            if event.startswith(prefix):
                stop(f"{what} ({event})")

    sys.addaudithook(hook)


def _unshare_network():
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNET) == 0:
            return "network namespace without interfaces (unshare CLONE_NEWNET)"
    except (OSError, AttributeError):
        pass
    return None


def _seccomp():
    """A seccomp filter on every thread (x86-64 Linux): fork, vfork, exec, sockets, ptrace and clone without
    CLONE_THREAD fail with EPERM (threads may still start; clone3 answers ENOSYS so the C library falls back to
    clone). The wall behind the audit hook: native code cannot start a process or open a socket either."""
    import ctypes
    import platform
    import struct

    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        return None
    deny, allow, nosys = 0x00050000 | 1, 0x7FFF0000, 0x00050000 | 38
    refused = (57, 58, 59, 322, 41, 53, 101, 310, 311)  # fork vfork execve execveat socket socketpair ptrace vm rw
    code = [("ld", 4, 0, 0), ("jeq", 0xC000003E, 1, 0), ("ret", 0x80000000, 0, 0), ("ld", 0, 0, 0),
            ("jge", 0x40000000, "deny", 0)]
    code += [("jeq", nr, "deny", 0) for nr in refused]
    code += [("jeq", 435, "nosys", 0), ("jeq", 56, 0, "allow"), ("ld", 16, 0, 0), ("jset", 0x10000, "allow", 0)]
    labels = {"deny": len(code), "allow": len(code) + 1, "nosys": len(code) + 2}
    code += [("ret", deny, 0, 0), ("ret", allow, 0, 0), ("ret", nosys, 0, 0)]
    ops = {"ld": 0x20, "jeq": 0x15, "jge": 0x35, "jset": 0x45, "ret": 0x06}
    raw = b"".join(struct.pack("<HBBI", ops[op], *(labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)), k)
                   for i, (op, k, jt, jf) in enumerate(code))
    buf = ctypes.create_string_buffer(raw, len(raw))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Prog(len(code), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return None
    if libc.syscall(317, 1, 1, ctypes.byref(prog)) != 0:  # seccomp(SET_MODE_FILTER, TSYNC)
        return None
    return "seccomp filter: no fork, exec or socket even from native code"


def _landlock(scratch):
    """A Landlock ruleset (Linux 5.13+): creating, writing, truncating, renaming or removing files is allowed only
    beneath the scratch folder, whatever code asks (jax's profiler or any native library included)."""
    import ctypes
    import struct

    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return None
    handled = 2 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096  # write, remove, make anything
    handled |= (8192 if abi >= 2 else 0) | (16384 if abi >= 3 else 0)  # refer (link, rename), truncate
    attr = ctypes.create_string_buffer(struct.pack("<Q", handled), 8)
    ruleset = libc.syscall(444, attr, 8, 0)
    if ruleset < 0:
        return None
    folder = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_PATH", 0))
    try:
        rule = ctypes.create_string_buffer(struct.pack("<Qi", handled, folder), 12)
        if libc.syscall(445, ruleset, 1, rule, 0) != 0 or libc.prctl(38, 1, 0, 0, 0) != 0:
            return None
        if libc.syscall(446, ruleset, 0) != 0:  # landlock_restrict_self
            return None
    finally:
        os.close(folder)
        os.close(ruleset)
    return f"Landlock (ABI {abi}): files written only inside the scratch folder, even from native code"


def _vm_bytes():
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _limit(name, value, protections, label):
    which = getattr(resource, name, None)
    if which is None:
        return
    try:
        resource.setrlimit(which, (value, value))
        protections.append(label)
    except (ValueError, OSError):
        pass


def _prepare(task, protections):
    """numpy (and jax, with the mesh) imported and warmed up; the inputs loaded; the runner returned."""
    import numpy as np

    inputs = [np.load(os.path.join("in", name), allow_pickle=False) for name in task["inputs"]]
    if task["mode"] == "plain":
        return inputs, (lambda fn: fn), None
    import jax
    from jax.sharding import Mesh, PartitionSpec as P

    names = tuple(a for a, _ in task["mesh"])
    shape = tuple(n for _, n in task["mesh"])
    kwargs = {}
    if getattr(jax.sharding, "AxisType", None) is not None:
        kwargs["axis_types"] = (jax.sharding.AxisType.Auto,) * len(names)
    devices = jax.devices("cpu")
    size = 1
    for n in shape:
        size *= n
    mesh = Mesh(np.array(devices[:size]).reshape(shape), names, **kwargs)
    spec = lambda s: P(*[tuple(x) if isinstance(x, list) else x for x in s])
    in_specs = tuple(spec(s) for s in task["in_specs"])
    out_specs = spec(task["out_spec"])
    jax.jit(lambda a: a + 1)(np.zeros(4, np.float32)).block_until_ready()  # threads and compiler started now
    protections.append(f"{size} simulated CPU devices (XLA_FLAGS host platform device count)")

    if task["mode"] == "layout":  # the submission's function returns a layout; the block is built here
        layout = _layout_module()
        shapes = {"x": inputs[0].shape, "w_in": inputs[1].shape, "w_out": inputs[2].shape}
        return inputs, (lambda fn: layout["build"](jax, mesh, layout["check"](fn(), shapes, size))), jax

    def build(fn):
        return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs))

    return inputs, build, jax


def _layout_module():
    """The layout task's checks and block (``_child_layout.py`` beside this file), run from its source into a
    namespace of its own: no import, so no bytecode written and nothing of scalemath loaded."""
    global LAYOUT_ERROR
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), LAYOUT_FILE)
    with open(path, encoding="utf-8") as fh:
        code = compile(fh.read(), path, "exec")
    namespace = {"__name__": "_child_layout"}
    exec(code, namespace)
    LAYOUT_ERROR = namespace["LayoutError"]
    return namespace


def _error_text(exc):
    summary = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
    frames = [f for f in summary if f.filename == "submission.py"]
    where = f" (line {frames[-1].lineno} of the submission)" if frames else ""
    return f"{type(exc).__name__}: {str(exc)[:1500]}{where}"


def main():
    scratch = os.path.realpath(sys.argv[1])
    os.chdir(scratch)
    with open("task.json") as fh:
        task = json.load(fh)
    with open("submission.py", "rb") as fh:
        source = fh.read()
    limits = task["limits"]
    protections = ["fresh interpreter (python -I), minimal environment, own session and scratch folder"]
    net = _unshare_network()
    if net:
        protections.append(net)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the size limit fails instead of killing
    inputs, build, jax = _prepare(task, protections)
    import numpy as np

    report_fd = os.open("violation.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    out_fd = os.open("result.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime) + int(limits["cpu_seconds"]) + 1
    _limit("RLIMIT_CPU", cpu, protections, f"CPU time {limits['cpu_seconds']} s")
    _limit("RLIMIT_AS", _vm_bytes() + int(limits["memory_bytes"]), protections,
           f"address space +{int(limits['memory_bytes']) // 2**20} MiB")
    _limit("RLIMIT_FSIZE", int(limits["file_bytes"]), protections,
           f"files of at most {int(limits['file_bytes']) / 2**20:g} MiB")
    _limit("RLIMIT_NOFILE", int(limits["open_files"]), protections, f"{limits['open_files']} open files")
    _limit("RLIMIT_NPROC", 0, protections, "no new processes (RLIMIT_NPROC; not applied to root)")
    _limit("RLIMIT_CORE", 0, protections, "no core files")
    for wall in (_seccomp(), _landlock(scratch)):
        if wall:
            protections.append(wall)
    import sysconfig

    roots = {scratch, "/proc/self", "/sys/devices/system/cpu", "/dev/null", "/dev/urandom", os.path.realpath(__file__)}
    roots |= {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    _install_hook(scratch, report_fd, sorted(roots))
    protections.append("audit hook: no sockets, processes, ctypes, scalemath, writes or reads outside the folder")
    with open("protections.json", "w") as fh:
        json.dump(protections, fh)
    result = {"protections": protections}
    try:
        module = {"__name__": "submission", "__file__": "submission.py", "__builtins__": __builtins__}
        exec(compile(source, "submission.py", "exec"), module)
        fn = module.get(task["entry"])
        if not callable(fn):
            raise NameError(f"submission.py defines no function {task['entry']}(...)")
        program = build(fn)
        out = program(*inputs)
        out = np.asarray(out)
        if jax is not None:
            with open("hlo.txt", "w") as fh:
                fh.write(program.lower(*inputs).compile().as_text())
        if out.dtype == object:
            raise TypeError("the function must return an array of numbers")
        with open("output.npy", "wb") as fh:
            np.save(fh, out, allow_pickle=False)
        result["status"] = "ok"
    except MemoryError:
        os.write(out_fd, json.dumps({"status": "memory", "protections": protections}).encode())
        os._exit(NO_MEMORY)
    except BaseException as exc:  # anything the submission raised (SystemExit too) is its error
        text = _error_text(exc)
        if LAYOUT_ERROR is not None and type(exc) is LAYOUT_ERROR:  # the returned layout broke a rule
            result.update(status="layout", message=str(exc)[:1500])
        elif "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "bad_alloc" in text:
            os.write(out_fd, json.dumps({"status": "memory", "protections": protections}).encode())
            os._exit(NO_MEMORY)
        else:
            result.update(status="error", message=text)
    os.write(out_fd, json.dumps(result).encode())
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
