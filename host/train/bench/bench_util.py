"""bench_util.py - what the Python parts of `make bench` share."""
import platform


def cpu_name():
    """The CPU's model name (/proc/cpuinfo), for the benchmark reports."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
