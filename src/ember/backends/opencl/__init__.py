"""backends/opencl"""
