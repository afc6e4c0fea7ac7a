"""The one training recipe every stack runs: AdamW with these hyperparameters, one step per call.

The learning rate is large enough that an update a stack skipped or got wrong moves weights far
beyond any dtype's tolerance (AdamW's first step moves almost every weight by about LR).
"""

from __future__ import annotations

LR = 1e-3
BETA_1 = 0.9
BETA_2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01
