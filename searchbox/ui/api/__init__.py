"""The REST API under /api/ (docs/app.md): post a job with a zip, read its state, events and answer, pause,
resume and cancel it, with the page's visitor rules. routes.py is the API and its mount in front of Gradio's
routes; body.py reads a job's form within the upload caps; fields.py checks its fields as the Ask form's;
stream.py sends a job's events as server-sent events."""
