"""What the tests and the benches share, and neither owns: a scripted OpenAI-compatible endpoint, a fake
chat model, the app started as a subprocess, the load harness, the sandbox and app attack suites, and
the reliability tallies. Both import it as `testkit`; nothing under searchbox/ does."""
