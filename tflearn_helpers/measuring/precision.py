"""Which mixed-precision policy fits this machine (lesson 02, benchmarks/).

GPUs: ``mixed_float16`` with loss scaling (Tensor Cores). CPUs: ``mixed_bfloat16`` where the
CPU has bfloat16 units (AVX512-BF16, AMX-BF16), ``float32`` otherwise. The flags are not
enough: on an Intel Xeon with AVX512-FP16 and AMX, oneDNN's float16 convolution training
step was measured about 700x slower than float32 (docs/MEASURED.md). So
``probe`` times one tiny training step per policy in a child process with one deadline;
a policy that misses it is "too slow here" and is never swept. Lesson 02 writes the choice of
a policy from the machine's kind, its flags and the probe.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..programs import events, processes

__all__ = ["POLICIES", "probe"]

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")  # float16 last: it may never finish


def _tiny_step_seconds(policy: str, steps: int = 3, batch: int = 16, image: int = 32) -> float:
    """Median seconds of one training step of two 64-channel 3x3 convolutions computed in the
    policy's dtype (float32 variables cast to it, as a Keras mixed policy does), in this
    process, after one untimed step. Plain TensorFlow: it traces in a fraction of a second."""
    import tensorflow as tf

    from .timing import time_steps

    dtype = {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}
    compute = dtype[policy]
    kernels = [tf.Variable(tf.random.normal((3, 3, c, 64), stddev=0.1)) for c in (3, 64)]
    x = tf.random.uniform((batch, image, image, 3))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = tf.cast(x, compute)
            for k in kernels:
                h = tf.nn.relu(tf.nn.conv2d(h, tf.cast(k, compute), 1, "SAME"))
            loss = tf.reduce_mean(tf.cast(h, tf.float32) ** 2)
        grads = tape.gradient(loss, kernels)
        for k, g in zip(kernels, grads, strict=True):
            k.assign_sub(0.01 * g)
        return loss

    return time_steps(step, steps=steps).median


def probe(
    deadline: float,
    policies=POLICIES,
    onednn: bool | None = None,
    threads: int | None = None,
    patience: float = 20,
) -> dict[str, float | None]:
    """Seconds per tiny step for each policy, measured in one fresh CPU-only process.

    The child reports each policy as it finishes. It is stopped at ``deadline`` s, or as
    soon as one policy has taken ``patience`` times as long as the first one (and over 5 s):
    the policies it has not reported are None ("too slow here"). ``onednn`` sets
    ``TF_ENABLE_ONEDNN_OPTS`` for the child (None: inherit); ``threads`` its thread pools.
    """
    if not deadline > 0:
        raise ValueError(f"deadline must be > 0 seconds, got {deadline!r}")
    unknown = set(policies) - set(POLICIES)
    if unknown:
        raise ValueError(f"unknown policies {sorted(unknown)}; choose from {POLICIES}")
    env = {"CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    if onednn is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    cmd = [
        sys.executable,
        "-m",
        "tflearn_helpers.measuring.precision",
        "--policies",
        ",".join(policies),
    ]
    cmd += ["--threads", str(threads or 0)]
    with processes.start(cmd, env=env, merge_stderr=False, name="precision probe") as child:
        end = time.monotonic() + deadline
        while child.running() and time.monotonic() < end and not _stuck(child, patience):
            time.sleep(0.1)
        ran_out = child.running()
        code = child.stop(grace=0) if ran_out else child.returncode
    if not ran_out and code != 0:
        raise RuntimeError(f"the precision probe failed (exit code {code}):\n{child.errors()}")
    seen = {e["policy"]: e["seconds"] for e in events.parse(child.output(), "step")}
    return {p: seen.get(p) for p in policies}


def _stuck(child: processes.Child, patience: float) -> bool:
    """Has the policy being measured now taken ``patience`` x the first one's time?"""
    done = events.parse(child.output(), "step")
    if not done:
        return False
    since = time.time() - done[-1]["at"]
    return since > max(5.0, patience * done[0]["took"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--threads", type=int, default=0, help="0: TensorFlow's default")
    args = parser.parse_args(argv)
    import tensorflow as tf  # before the first policy's clock starts

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    for policy in args.policies.split(","):
        began = time.time()
        seconds = _tiny_step_seconds(policy)
        events.emit(
            "step", policy=policy, seconds=seconds, took=time.time() - began, at=time.time()
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
