"""The library's typed errors as Python exceptions (SPEC §1, §12).

Every rejected call raises the subclass of its op family. The exception carries the library's
machine-readable ``kind`` (``"ShapeMismatch"``, ``"InvalidValue"``, ...), the offending
``argument``, the ``expected`` and the ``actual`` value; ``str(e)`` is the library's message.
A rejected call has written nothing.
"""


class Error(Exception):
    """A rudnn call was rejected or failed; see ``kind``, ``argument``, ``expected``, ``actual``."""

    family = "rudnn"

    def __init__(self, kind, argument, expected, actual, detail="", message=None):
        self.kind = kind
        self.argument = argument
        self.expected = expected
        self.actual = actual
        self.detail = detail
        if message is None:
            message = f"{argument}: expected {expected}, got {actual}" + (f" ({detail})" if detail else "")
        super().__init__(f"[{kind}] {message}")


class NormalizationError(Error):
    family = "normalization"


class AttentionSetupError(Error):
    family = "attention"


class ConvSetupError(Error):
    family = "convolution"


class GatedDeltaError(Error):
    family = "gated_delta"


class MoeError(Error):
    family = "moe"


class PagedAttentionError(Error):
    family = "paged_attention"


FAMILIES = {cls.family: cls for cls in (NormalizationError, AttentionSetupError, ConvSetupError,
                                        GatedDeltaError, MoeError, PagedAttentionError)}


def raise_if_failed(outcome):
    """Raises the error tuple a binding returned: (family, kind, argument, expected, actual, detail, message)."""
    if outcome is not None:
        family, kind, argument, expected, actual, detail, message = outcome
        raise FAMILIES[family](kind, argument, expected, actual, detail, message)
