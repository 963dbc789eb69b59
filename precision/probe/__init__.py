"""Record what a GPU's tensor-core instructions compute, and replay the recordings.

- :mod:`precision.probe.catalog`: which instructions are probed (kernel entry, chain length).
- :mod:`precision.probe.inputs`: seeded input generators, one per data kind.
- :mod:`precision.probe.capture`: build and run the probe kernels (``cuda/``) on an attached
  GPU, save recordings, and verify recordings against :func:`precision.mma`.
- :mod:`precision.probe.facts`: facts about the hardware derived from the recordings alone.
- :mod:`precision.probe.wgmma`: record and compare ``wgmma.mma_async`` against ``mma.sync``.
- :mod:`precision.probe.tf32_cvt`: exhaustive check of ``cvt.rn.tf32.f32``.

Nothing here imports CuPy at import time; CPU replay works without a GPU.
"""
