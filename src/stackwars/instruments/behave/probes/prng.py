"""Seed 000's first section, PRNG: a global state that every draw advances (NumPy's legacy
``np.random``, PyTorch, TensorFlow) against a JAX key, which gives the same numbers until split.

Each program draws normal numbers shaped like a small input ``x`` (``randn_like`` and its
equivalents: torch draws on ``x``'s device, torchax's included). The draw is the function the
stack prepares (jitted, compiled, a tf.function); seeding, splitting and making generators
happen outside it, in the user's Python, where the seed does them. The worker compares the
numbers of two draws (``Probe.expected_draws``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stackwars.instruments.behave.probes import NEW, SAME, Prepare, Probe, register
from stackwars.instruments.behave.probes._arrays import NATIVE_FRAMEWORKS

Fn = Callable[..., Any]

SEED = 42  # the seed's
# Seed 000: torch and TensorFlow (and NumPy's np.random) advance a global state with every
# draw; a JAX key is a value, the same key gives the same numbers.
ADVANCES = {"numpy": NEW, "jax": SAME, "torch": NEW, "tensorflow": NEW}


def _like() -> Any:
    import numpy as np

    return np.zeros(4, dtype=np.float32)


# The global state (jax: a key made from the seed), reset before each draw.


def _reseeded_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    draw = prepare(lambda x: np.random.standard_normal(x.shape).astype(x.dtype))

    def call(seed: int, x: Any) -> Any:
        np.random.seed(seed)
        return draw(x)

    return call


def _reseeded_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import jax

    draw = prepare(lambda key, x: jax.random.normal(key, x.shape, x.dtype))
    return lambda seed, x: draw(jax.random.key(seed), x)


def _torch_noise() -> Fn:
    import torch

    # A function of the user's, not torch's own callable, is what a user hands to compile.
    def noise(x: Any) -> Any:
        return torch.randn_like(x)

    return noise


def _reseeded_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import torch

    draw = prepare(_torch_noise())

    def call(seed: int, x: Any) -> Any:
        torch.manual_seed(seed)
        return draw(x)

    return call


def _reseeded_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    draw = prepare(lambda x: tf.random.normal(tf.shape(x), dtype=x.dtype))

    def call(seed: int, x: Any) -> Any:
        tf.random.set_seed(seed)
        return draw(x)

    return call


RESEEDED = {
    "numpy": _reseeded_numpy,
    "jax": _reseeded_jax,
    "torch": _reseeded_torch,
    "tensorflow": _reseeded_tensorflow,
}

register(
    Probe(
        name="prng-seed-twice",
        description="seed 42 and draw, twice (jax: key(42) twice): the same numbers expected",
        calls=lambda: [(SEED, _like()), (SEED, _like())],
        implementations=RESEEDED,
        expected_draws=dict.fromkeys(NATIVE_FRAMEWORKS, SAME),
    )
)
register(
    Probe(
        name="prng-processes",
        description="seed 42 and draw, in two fresh processes: the same numbers expected",
        calls=lambda: [(SEED, _like())],
        implementations=RESEEDED,
        expected_draws=dict.fromkeys(NATIVE_FRAMEWORKS, SAME),
        across_processes=True,
    )
)


# Seeded once, then two draws: the global state advances; a JAX key, passed again, does not.


def _once_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    np.random.seed(SEED)
    return prepare(lambda x: np.random.standard_normal(x.shape).astype(x.dtype))


def _once_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import jax

    key = jax.random.key(SEED)
    draw = prepare(lambda key, x: jax.random.normal(key, x.shape, x.dtype))
    return lambda x: draw(key, x)


def _once_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import torch

    torch.manual_seed(SEED)
    return prepare(_torch_noise())


def _once_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    tf.random.set_seed(SEED)
    return prepare(lambda x: tf.random.normal(tf.shape(x), dtype=x.dtype))


register(
    Probe(
        name="prng-draw-twice",
        description="seed 42 once, draw twice (jax: one key, passed twice): new numbers, "
        "except from a JAX key",
        calls=lambda: [(_like(),), (_like(),)],
        implementations={
            "numpy": _once_numpy,
            "jax": _once_jax,
            "torch": _once_torch,
            "tensorflow": _once_tensorflow,
        },
        expected_draws=ADVANCES,
    )
)


# An explicit generator object, seeded once, two draws: the object is state that advances too.
# JAX's explicit state is the key, which is why its program is the one above.


def _generator_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    rng = np.random.default_rng(SEED)
    return prepare(lambda x: rng.standard_normal(x.shape, dtype=x.dtype))


def _generator_torch(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import torch

    generator = torch.Generator().manual_seed(SEED)
    return prepare(
        lambda x: torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
    )


def _generator_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    generator = tf.random.Generator.from_seed(SEED)
    return prepare(lambda x: generator.normal(tf.shape(x), dtype=x.dtype))


register(
    Probe(
        name="prng-generator",
        description="a generator object seeded once, two draws (default_rng, torch.Generator, "
        "tf.random.Generator; jax: the key): new numbers, except from a JAX key",
        calls=lambda: [(_like(),), (_like(),)],
        implementations={
            "numpy": _generator_numpy,
            "jax": _once_jax,
            "torch": _generator_torch,
            "tensorflow": _generator_tensorflow,
        },
        expected_draws=ADVANCES,
    )
)


# Draw, then split and draw from the new key: splitting is how JAX gets new numbers. NumPy's
# Generator spawns children and tf.random.Generator splits; torch has no way to split.


def _split_numpy(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import numpy as np

    rng = np.random.default_rng(SEED)
    draw = prepare(lambda rng, x: rng.standard_normal(x.shape, dtype=x.dtype))

    def call(split: bool, x: Any) -> Any:
        return draw(rng.spawn(1)[0] if split else rng, x)

    return call


def _split_jax(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import jax

    keys = [jax.random.key(SEED)]
    draw = prepare(lambda key, x: jax.random.normal(key, x.shape, x.dtype))

    def call(split: bool, x: Any) -> Any:
        if not split:
            return draw(keys[0], x)
        keys[0], subkey = jax.random.split(keys[0])
        return draw(subkey, x)

    return call


def _split_tensorflow(mode: str, prepare: Prepare, tally: Fn) -> Fn:
    import tensorflow as tf

    generator = tf.random.Generator.from_seed(SEED)
    draw = prepare(lambda generator, x: generator.normal(tf.shape(x), dtype=x.dtype))

    def call(split: bool, x: Any) -> Any:
        return draw(generator.split(1)[0] if split else generator, x)

    return call


register(
    Probe(
        name="prng-split",
        description="draw, split the key (Generator.spawn, tf.random.Generator.split) and draw "
        "with the new one: new numbers expected",
        calls=lambda: [(False, _like()), (True, _like())],
        implementations={
            "numpy": _split_numpy,
            "jax": _split_jax,
            "tensorflow": _split_tensorflow,
        },
        expected_draws={"numpy": NEW, "jax": NEW, "tensorflow": NEW},
    )
)
