/* cupy.ElementwiseKernel operation body (element i) */
long long b = i / H, j = i % H, base = b * 3 * H;
float rz = (float)r[base + j], rr = (float)r[base + H + j], rn = (float)r[base + 2 * H + j];
if (has_rb) { rz += (float)rb[j]; rr += (float)rb[H + j]; rn += (float)rb[2 * H + j]; }
float z = 1.f / (1.f + expf(-((float)x[base + j] + rz)));
float rs = 1.f / (1.f + expf(-((float)x[base + H + j] + rr)));
float n = tanhf((float)x[base + 2 * H + j] + rs * rn);
h_out = (1.f - z) * n + z * (float)h_prev;
