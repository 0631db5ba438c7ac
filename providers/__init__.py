"""First-party providers; each sub-package depends only on :mod:`spi`."""
