"""The dataroom: safe unpacking, text extraction per format, chunking (design §2.2, §2.6, §5)."""

from searchbox.dataroom.chunking import Chunk, chunk_file
from searchbox.dataroom.corpus import Corpus
from searchbox.dataroom.extract import (
    EXTRACTORS,
    ExtractedFile,
    Segment,
    extract_dataroom,
    extract_file,
    extractor,
    html_to_text,
)
from searchbox.dataroom.unpack import DataroomError, UnpackLimits, install_dataroom

__all__ = [
    "EXTRACTORS",
    "Chunk",
    "Corpus",
    "DataroomError",
    "ExtractedFile",
    "Segment",
    "UnpackLimits",
    "chunk_file",
    "extract_dataroom",
    "extract_file",
    "extractor",
    "html_to_text",
    "install_dataroom",
]
