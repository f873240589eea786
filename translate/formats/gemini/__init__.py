"""Google Gemini (`gemini`): the request side (`request.py`); the stream decoder and encoder
are being written on their own branch."""
