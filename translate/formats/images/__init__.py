"""The images format: OpenAI image-generation and image-edit streams (spec/images.md).

`ImagesDecoder` turns `image_generation.*` / `image_edit.*` SSE streams into IR image blocks;
`ImagesEncoder` writes IR image blocks back as such a stream, for openai-python's
`client.images.generate(..., stream=True)` and `client.images.edit(..., stream=True)`.
"""

from __future__ import annotations

from .._spec import FinalObject, FormatSpec
from .decode import ImagesDecoder
from .encode import ImagesEncoder

__all__ = ["SPEC", "ImagesDecoder", "ImagesEncoder"]


def _final() -> FinalObject:
    from .._openai import error_body
    from .accumulate import ImagesAccumulator
    from .unfold import unfold

    return FinalObject(ImagesAccumulator, unfold, error_body)


SPEC = FormatSpec(name="images", vendor="openai", decoder=ImagesDecoder, encoder=ImagesEncoder,
                  final=_final, request=None)
