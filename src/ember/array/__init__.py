"""array"""
