"""The further questions' scripts, each run as `python studies/<name>.py`: ar.py (the ladder's
backbone in raster order), maskgit_factored.py (a factored head), objects.py (more objects than
training showed), inside.py (what the networks' layers and heads hold)."""
