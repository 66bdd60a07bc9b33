"""`draemu demo`: guided walk-throughs that run real kubectl against a draemu cluster."""
