"""The images format: OpenAI image-generation and image-edit streams (spec/images.md).

`ImagesDecoder` turns `image_generation.*` / `image_edit.*` SSE streams into IR image blocks;
`ImagesEncoder` writes IR image blocks back as such a stream, for openai-python's
`client.images.generate(..., stream=True)` and `client.images.edit(..., stream=True)`.
"""

from __future__ import annotations

from .._openai import error_body
from .._spec import FormatSpec
from .accumulate import ImagesAccumulator
from .decode import ImagesDecoder
from .encode import ImagesEncoder
from .unfold import unfold

__all__ = ["SPEC", "ImagesDecoder", "ImagesEncoder"]

SPEC = FormatSpec(
    name="images", vendor="openai", decoder=ImagesDecoder, encoder=ImagesEncoder,
    accumulator=ImagesAccumulator, unfold=unfold, error_body=error_body, request=None)
