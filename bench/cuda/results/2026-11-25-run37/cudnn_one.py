import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 16, 4096, 128, dtype=torch.float16, device="cuda") for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3): F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
